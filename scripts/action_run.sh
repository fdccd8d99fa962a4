#!/usr/bin/env bash
# The steps of the GitHub Action (action.yml at the repository root), kept here so they run and are tested
# outside GitHub (tests/test_action.py runs them with a fake GITHUB_* environment and a fake `jaxdiag`).
#
#   action_run.sh install   pip-installs jaxdiag: JAXDIAG_VERSION empty -> the action's own checkout
#                           (GITHUB_ACTION_PATH); `0.2.0` -> jaxdiag==0.2.0; anything else (`jaxdiag>=0.2`, a URL,
#                           a path) is handed to pip as it is.
#   action_run.sh run       runs `jaxdiag JAXDIAG_ARGS`; a line that does not start with a jaxdiag command runs
#                           under `check` (`args: mypkg` = `jaxdiag check mypkg`). With JAXDIAG_SARIF=true the
#                           report is SARIF, written to $RUNNER_TEMP/jaxdiag.sarif (step output `sarif`), and a run
#                           that did not pass is run again as text (-q, from jaxdiag's cache) so the log says why.
#                           Step output `exit-code` is jaxdiag's exit code on every path, and so is this script's.
set -uo pipefail

PYTHON=${JAXDIAG_PYTHON:-python}
COMMANDS=" check batching grad sharding record rules "

output() {  # output NAME VALUE: a step output (GITHUB_OUTPUT), also printed when run by hand
  if [[ -n "${GITHUB_OUTPUT:-}" ]]; then
    printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
  else
    printf '%s=%s\n' "$1" "$2"
  fi
}

fail_usage() {  # the same one-line contract as jaxdiag's own usage errors, exit 2
  echo "jaxdiag action: error: $1" >&2
  exit 2
}

install() {
  local version=${JAXDIAG_VERSION:-} spec
  if [[ -z "$version" ]]; then
    spec=${GITHUB_ACTION_PATH:?GITHUB_ACTION_PATH is not set (not running as an action)}
  elif [[ "$version" =~ ^v?[0-9]+(\.[0-9]+)*([.-]?(a|b|rc|dev|post)[0-9]*)*$ ]]; then
    spec="jaxdiag==${version#v}"
  else
    spec=$version
  fi
  echo "jaxdiag action: pip install $spec"
  "$PYTHON" -m pip install --disable-pip-version-check -q "$spec"
}

run() {
  local words=() line=${JAXDIAG_ARGS:-check}
  # Shell-like words (quotes respected, nothing expanded or executed): xargs does the splitting.
  if [[ -n "${line//[[:space:]]/}" ]]; then
    mapfile -d '' words < <(printf '%s' "$line" | xargs printf '%s\0') \
      || fail_usage "cannot split args into words (unbalanced quotes?): $line"
  fi
  if [[ ${#words[@]} -eq 0 || "$COMMANDS" != *" ${words[0]} "* ]]; then
    words=(check "${words[@]}")
  fi
  local sarif=${JAXDIAG_SARIF:-false} code
  case "$sarif" in
    true | false) ;;
    *) fail_usage "sarif must be true or false, not '$sarif'" ;;
  esac
  if [[ "$sarif" == true ]]; then
    local word
    for word in "${words[@]}"; do
      case "$word" in
        --format | --format=* | --output | --output=*)
          fail_usage "sarif: true writes the report itself; remove $word from args" ;;
      esac
    done
    local path="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/jaxdiag.sarif"
    echo "jaxdiag action: jaxdiag ${words[*]} --format sarif --output $path"
    jaxdiag "${words[@]}" --format sarif --output "$path"
    code=$?
    if [[ -s "$path" ]]; then
      output sarif "$path"
    fi
    if [[ $code -ne 0 ]]; then
      echo "jaxdiag action: exit code $code; the report as text:"
      local quiet=(-q)
      [[ " ${words[*]} " == *" -v "* || " ${words[*]} " == *" --verbose "* || " ${words[*]} " == *" -q "* ||
        " ${words[*]} " == *" --quiet "* ]] && quiet=()
      jaxdiag "${words[@]}" "${quiet[@]}"
    fi
  else
    echo "jaxdiag action: jaxdiag ${words[*]}"
    jaxdiag "${words[@]}"
    code=$?
  fi
  return "$code"
}

# Every exit, a usage error included, leaves its code in the step output `exit-code`.
trap 'output exit-code "$?"' EXIT

case "${1:-}" in
  install) install ;;
  run) run ;;
  *) fail_usage "usage: action_run.sh install|run" ;;
esac
