"""The GitHub Action (action.yml): its bash steps run here as GitHub would run them, with a fake GITHUB_* environment
(GITHUB_ACTION_PATH, GITHUB_WORKSPACE, GITHUB_OUTPUT, RUNNER_TEMP) and a fake `jaxdiag` / `python` on PATH that
record their arguments and exit with a chosen code. `${{ ... }}` expressions are filled in from the inputs the way
the runner does for these simple forms (inputs.X, steps.run.outputs.X)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
BASH = shutil.which("bash")
pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")

FAKE = """#!/usr/bin/env bash
# records its command line (one word per line, a blank line after each call); `jaxdiag` exits with FAKE_CODE
printf '%s\\n' "$@" >> "$FAKE_LOG"; echo >> "$FAKE_LOG"
out=""; prev=""
for a in "$@"; do [[ "$prev" == --output ]] && out=$a; prev=$a; done
[[ -n "$out" ]] && echo '{"version": "2.1.0", "runs": []}' > "$out"
[[ "$(basename "$0")" == jaxdiag ]] && exit "${FAKE_CODE:-0}"
exit 0
"""


@pytest.fixture
def env(tmp_path):
    """A fake runner: workspace, temp folder, output file, and `jaxdiag`/`python` fakes first on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("jaxdiag", "fakepython"):
        (bin_dir / name).write_text(FAKE)
        (bin_dir / name).chmod(0o755)
    (tmp_path / "workspace").mkdir()
    (tmp_path / "runner_temp").mkdir()
    return {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_WORKSPACE": str(tmp_path / "workspace"),
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        "RUNNER_TEMP": str(tmp_path / "runner_temp"),
        "FAKE_LOG": str(tmp_path / "calls.log"),
        "JAXDIAG_PYTHON": "fakepython",
    }


def _inputs(**given: str) -> dict[str, str]:
    values = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    values.update({k.replace("_", "-"): v for k, v in given.items()})
    return values


def _expand(text: str, inputs: dict[str, str], outputs: dict[str, str]) -> str:
    def value(match: re.Match) -> str:
        expr = match.group(1).strip()
        if expr.startswith("inputs."):
            return inputs[expr[len("inputs."):]]
        if expr.startswith("steps.run.outputs."):
            return outputs.get(expr[len("steps.run.outputs."):], "")
        raise AssertionError(f"expression the fake runner does not know: {expr}")
    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def _outputs(env: dict[str, str]) -> dict[str, str]:
    path = Path(env["GITHUB_OUTPUT"])
    pairs = [line.split("=", 1) for line in path.read_text().splitlines()] if path.exists() else []
    return dict(pairs)


def run_action(env: dict[str, str], code: int = 0, **given: str) -> tuple[int, dict[str, str], list[list[str]], str]:
    """Run every bash step of action.yml in order (steps with `uses:` are skipped, as their own actions);
    returns (the job's exit code, the run step's outputs, jaxdiag's calls, the log)."""
    inputs = _inputs(**given)
    outputs: dict[str, str] = {}
    log = ""
    failed = 0
    for step in ACTION["runs"]["steps"]:
        condition = step.get("if", "")
        if "run" not in step:
            continue
        if failed and "always()" not in condition:
            continue
        step_env = {**env, "FAKE_CODE": str(code)}
        step_env.update({k: _expand(str(v), inputs, outputs) for k, v in step.get("env", {}).items()})
        if step.get("id") != "run":
            step_env["GITHUB_OUTPUT"] = env["GITHUB_OUTPUT"] + "." + str(len(log))  # each step its own file
        cwd = Path(env["GITHUB_WORKSPACE"]) / _expand(step.get("working-directory", "."), inputs, outputs)
        done = subprocess.run([BASH, "-e", "-c", _expand(step["run"], inputs, outputs)], env=step_env, cwd=cwd,
                              capture_output=True, text=True, check=False, timeout=60)
        log += done.stdout + done.stderr
        if step.get("id") == "run":
            outputs = _outputs(env)
        failed = failed or done.returncode
    calls_log = Path(env["FAKE_LOG"])
    calls = [chunk.splitlines() for chunk in calls_log.read_text().split("\n\n") if chunk] if calls_log.exists() else []
    return failed, outputs, calls, log


def test_action_declares_its_inputs_and_uploads_sarif_with_codeql():
    assert set(ACTION["inputs"]) >= {"args", "version", "sarif", "python-version"}
    assert ACTION["inputs"]["args"]["default"] == "check"
    assert ACTION["runs"]["using"] == "composite"
    uses = [s["uses"] for s in ACTION["runs"]["steps"] if "uses" in s]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    assert any(u.startswith("actions/setup-python@") for u in uses)


@pytest.mark.parametrize("code", [0, 1, 2, 3, 5, 130])
def test_the_job_fails_with_jaxdiags_exit_code(env, code):
    failed, outputs, calls, log = run_action(env, code=code)
    assert failed == code, log
    assert outputs["exit-code"] == str(code)
    installs = [c for c in calls if c[:2] == ["-m", "pip"]]
    assert installs and installs[0][-1] == str(ROOT), calls  # empty version: the action's own checkout
    runs = [c for c in calls if c[:2] != ["-m", "pip"]]
    assert runs == [["check"]], calls
    assert "sarif" not in outputs


@pytest.mark.parametrize("args, expected", [
    ("check mypkg --select JXB", ["check", "mypkg", "--select", "JXB"]),
    ("mypkg src/ops.py", ["check", "mypkg", "src/ops.py"]),  # no command: runs under check
    ("grad 'ops.py:f' --arg 'f32[3]' --arg \"f32[2, 3]\"", ["grad", "ops.py:f", "--arg", "f32[3]", "--arg",
                                                           "f32[2, 3]"]),
    ("", ["check"]),
])
def test_args_become_jaxdiags_command_line(env, args, expected):
    failed, _, calls, log = run_action(env, args=args)
    assert failed == 0, log
    assert [c for c in calls if c[:2] != ["-m", "pip"]] == [expected]


@pytest.mark.parametrize("version, spec", [("0.2.0", "jaxdiag==0.2.0"), ("v0.3.1rc1", "jaxdiag==0.3.1rc1"),
                                           ("jaxdiag>=0.2", "jaxdiag>=0.2"),
                                           ("git+https://example.org/jaxdiag@main", "git+https://example.org/jaxdiag@main")])
def test_version_is_installed_with_pip(env, version, spec):
    failed, _, calls, log = run_action(env, version=version)
    assert failed == 0, log
    assert calls[0][:2] == ["-m", "pip"] and calls[0][-1] == spec


@pytest.mark.parametrize("code", [0, 1, 5])
def test_sarif_is_written_to_runner_temp_and_named_in_the_outputs(env, code):
    failed, outputs, calls, log = run_action(env, code=code, args="mypkg", sarif="true")
    path = Path(env["RUNNER_TEMP"]) / "jaxdiag.sarif"
    assert failed == code, log
    assert outputs["sarif"] == str(path) and path.is_file()
    runs = [c for c in calls if c[:2] != ["-m", "pip"]]
    assert runs[0] == ["check", "mypkg", "--format", "sarif", "--output", str(path)]
    # a run that did not pass is shown as text too, so the log says why the job failed
    assert runs[1:] == ([] if code == 0 else [["check", "mypkg", "-q"]])


def test_sarif_with_a_format_in_args_is_a_usage_error(env):
    failed, outputs, calls, log = run_action(env, args="check --format json", sarif="true")
    assert failed == 2 and outputs["exit-code"] == "2"
    assert "remove --format from args" in log
    assert not [c for c in calls if c[:2] != ["-m", "pip"]]


def test_a_failed_install_fails_the_job_without_running_jaxdiag(env):
    env["JAXDIAG_PYTHON"] = "false"  # pip fails
    failed, outputs, calls, log = run_action(env)
    assert failed != 0 and calls == [] and "exit-code" not in outputs


def test_the_run_script_alone_exits_with_jaxdiags_code(env):
    """`scripts/action_run.sh run` outside the action: its own exit code is jaxdiag's."""
    done = subprocess.run([BASH, str(ROOT / "scripts" / "action_run.sh"), "run"],
                          env={**env, "FAKE_CODE": "4", "JAXDIAG_ARGS": "check pkg"}, capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 4
    assert _outputs(env) == {"exit-code": "4"}
