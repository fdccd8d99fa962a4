"""`jaxdiag sharding` / `jaxdiag.check_sharding`: run the sharding checks in a child process on virtual CPU devices.

The number of CPU devices is fixed when JAX initialises, by `--xla_force_host_platform_device_count` in
`XLA_FLAGS`. The user's process may have initialised JAX already (a test suite, a notebook) and must keep its
environment, so the checks run in `python -m jaxdiag._mesh._sharding_child` started with that flag appended to the
child's copy of `XLA_FLAGS` (and `JAX_PLATFORMS=cpu`). The child sends back the report as schema-1 JSON, which is
turned into the same `Report` every command renders.

A collective on virtual devices can wait forever (a rule that never returns, or a JAX release whose CPU collectives
deadlock), so the child runs under a per-target time limit, like `jaxdiag check`'s workers: it writes which target
and check it is running to a status file and each finished target's report to a results file, and the parent stops
it when one target has run past the limit. The stopped target gets the JXU004 result naming the check that was
running; the targets finished before it keep their reports, the ones it never reached get a JXN003 note saying
so.
"""

from __future__ import annotations

import inspect
import json
import os
import pickle
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import fields
from typing import Any, Sequence

from .. import __version__
from .._core._errors import TargetLoadError, UsageError
from .._core._report import CheckResult, Finding, Location, Report, TargetReport

DEFAULT_MESH = (2, 4)
MAX_DEVICES = 64
# Seconds one target may run in the child: the default of `jaxdiag check`'s per-target limit (`--timeout`).
DEFAULT_TIMEOUT = 300.0
# Seconds the child may take to start (Python, JAX, the virtual devices) before its first target, at least: a
# loaded machine takes tens of seconds, and a per-target limit of a few seconds must not stop the start-up.
START_SECONDS = 120.0
# How often the parent looks at the child's status while it runs.
POLL_SECONDS = 0.2
CHILD_COMMAND = (sys.executable, "-m", "jaxdiag._mesh._sharding_child")


def check_sharding(
    target: Any,
    *args: Any,
    params: dict[str, Any] | None = None,
    mesh: Sequence[int] | str = DEFAULT_MESH,
    seed: int = 0,
    include_jax: bool = False,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    app_dir: str = ".",
    max_placements: int = 12,
    timeout: float | None = DEFAULT_TIMEOUT,
) -> Report:
    """Check a target on a virtual CPU mesh: jit on sharded inputs against the unsharded result, custom_partitioning
    callbacks and Shardy rules, shard_map, and the gathering cost of opaque calls.

    `target` is an object or a TARGET string; each arg a concrete array, a SPEC string (`f32[3]@positive`,
    `key[]`, a pytree such as `(f32[3], i32[])`), or a static Python value; `params` a primitive's bind
    parameters; `mesh` the mesh shape (`(2, 4)` or `"2x4"`, at most 64 devices); `timeout` seconds the target may
    run before it is stopped with a JXU004 result (None or 0: no limit). The checks run in a child process; this
    process's JAX and environment are untouched.
    """
    from .._core._filtering import Filter

    shape = parse_mesh(mesh) if isinstance(mesh, str) else validate_mesh(tuple(mesh))
    settings = Filter(select, ignore)  # unknown codes: a usage error before the child starts
    ref = target_ref(target)
    entry = {"ref": ref, "args": list(args), "params": dict(params or {})}
    report = run_in_child([entry], shape, seed=seed, include_jax=include_jax, app_dir=app_dir,
                          max_placements=max_placements, timeout=timeout)
    return settings.apply(report)


# ---------------------------------------------------------------------------------------------------------------
# Options
# ---------------------------------------------------------------------------------------------------------------


def validate_mesh(shape: tuple[int, ...]) -> tuple[int, ...]:
    if not shape or len(shape) > 4 or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1
                                              for n in shape):
        raise UsageError(f"bad mesh {shape!r}: give 1 to 4 positive axis sizes, e.g. 2x4")
    total = 1
    for n in shape:
        total *= n
    if total > MAX_DEVICES:
        raise UsageError(f"mesh {'x'.join(map(str, shape))} needs {total} virtual devices; at most {MAX_DEVICES}")
    return shape


def parse_mesh(text: str) -> tuple[int, ...]:
    """`2x4` -> (2, 4); `8` -> (8,)."""
    cleaned = (text or "").strip().lower().replace("×", "x")
    if not re.fullmatch(r"\d+(x\d+){0,3}", cleaned):
        raise UsageError(f"bad --mesh {text!r}: write axis sizes separated by 'x', e.g. 2x4 or 8")
    return validate_mesh(tuple(int(n) for n in cleaned.split("x")))


def target_ref(target: Any) -> str:
    """A TARGET string the child can load for an object given to the API: `module:attr` when the module imports by
    name, else `path/to/file.py:attr`."""
    if isinstance(target, str):
        return target
    for module in _modules_holding(target):
        attr = next(a for a, v in vars(module).items() if v is target)
        name = module.__name__
        path = getattr(module, "__file__", None)
        if name != "__main__" and not name.startswith("_jaxdiag_user_") and getattr(module, "__spec__", None):
            return f"{name}:{attr}"
        if path:
            return f"{path}:{attr}"
    raise TargetLoadError("check_sharding runs in a child process, which must import the target: pass a TARGET "
                          "string ('pkg.mod:attr' or 'path/file.py:attr') or an object defined at module level")


def _modules_holding(obj: Any) -> list[Any]:
    fn = getattr(obj, "fun", None) or getattr(obj, "__wrapped__", None) or obj
    home = getattr(fn, "__module__", None) or getattr(inspect.getmodule(fn), "__name__", None)
    found = []
    for module in list(sys.modules.values()):
        try:
            if module is not None and any(v is obj for v in vars(module).values()):
                found.append(module)
        except TypeError:
            continue
    found.sort(key=lambda m: (m.__name__ != home, m.__name__ == "__main__"))
    return found


# ---------------------------------------------------------------------------------------------------------------
# The child process
# ---------------------------------------------------------------------------------------------------------------


def child_env(devices: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment with the device-count flag appended to XLA_FLAGS (the last occurrence of a flag
    wins, so a user's own count is overridden in the child only) and the CPU platform selected."""
    env = dict(os.environ if base is None else base)
    flag = f"--xla_force_host_platform_device_count={devices}"
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {flag}".strip()
    env["JAX_PLATFORMS"] = "cpu"
    return env


def run_in_child(entries: list[dict[str, Any]], mesh: tuple[int, ...], *, seed: int = 0, include_jax: bool = False,
                 app_dir: str = ".", max_placements: int = 12, timeout: float | None = DEFAULT_TIMEOUT,
                 strict: bool = True) -> Report:
    """Every finding of every entry, unfiltered (each target report carries its anchors and config keys, so the
    caller filters once, as every command does). `timeout`: seconds per target (None or 0: no limit)."""
    devices = 1
    for n in mesh:
        devices *= n
    folder = tempfile.mkdtemp(prefix="jaxdiag-sharding-")
    paths = {name: os.path.join(folder, f"{name}.json") for name in ("out", "status", "partial")}
    request = {"targets": entries, "mesh": list(mesh), "seed": seed, "include_jax": include_jax, "app_dir": app_dir,
               "max_placements": max_placements, "sys_path": [p for p in sys.path if p], "out_path": paths["out"],
               "status_path": paths["status"], "partial_path": paths["partial"], "strict": strict}
    try:
        try:
            payload = pickle.dumps(request)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise UsageError(f"the sharding checks' inputs cannot be sent to the child process: {exc}") from None
        returncode, stderr, stopped = _run_child(payload, child_env(devices), timeout or None, paths["status"],
                                                 folder)
        if stopped is not None:
            return _timed_out(entries, _read_lines(paths["partial"]), stopped, timeout or 0.0)
        try:
            with open(paths["out"], encoding="utf-8") as result:
                answer = json.load(result)
        except (OSError, ValueError):
            status = _read_status(paths["status"])
            if "target_started" in status and returncode is not None:  # the user's code ended or crashed it
                return _timed_out(entries, _read_lines(paths["partial"]), status, timeout or 0.0, returncode)
            answer = {"internal_error": f"the child process exited with {returncode} without a report",
                      "traceback": stderr[-4000:]}
    finally:
        for path in [*paths.values(), os.path.join(folder, "stderr.txt")]:
            try:
                os.unlink(path)
            except OSError:
                pass
        try:
            os.rmdir(folder)
        except OSError:
            pass
    if "usage_error" in answer:
        error = TargetLoadError if answer.get("error_type") == "TargetLoadError" else UsageError
        raise error(answer["usage_error"])
    if "internal_error" in answer:
        return _internal(entries, answer)
    return report_from_dict(answer["report"])


def _run_child(payload: bytes, env: dict[str, str], limit: float | None, status_path: str, folder: str
               ) -> tuple[int | None, str, dict[str, Any] | None]:
    """(exit code, stderr, None) of a child that finished; (None, stderr, status) of one stopped because a target
    ran past `limit` seconds (or the start-up past max(limit, START_SECONDS)), `status` saying what was running and
    for how long. stderr goes to a file: a pipe nobody reads would block a child that writes much."""
    with open(os.path.join(folder, "stderr.txt"), "w+b") as stderr, \
            tempfile.TemporaryFile() as stdin:
        stdin.write(payload)
        stdin.seek(0)
        child = subprocess.Popen(list(CHILD_COMMAND), stdin=stdin, stdout=subprocess.DEVNULL, stderr=stderr,
                                 env=env, start_new_session=os.name == "posix")
        started = time.monotonic()
        stopped: dict[str, Any] | None = None
        try:
            while child.poll() is None:
                try:
                    child.wait(timeout=POLL_SECONDS)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if limit is not None:
                    stopped = _past_limit(_read_status(status_path), started, limit)
                    if stopped is not None:
                        _stop(child)
                        break
        finally:
            if child.poll() is None:  # Ctrl-C or an error in this process: the child never outlives it
                _stop(child)
        stderr.seek(0)
        text = stderr.read().decode(errors="replace")
    return (None if stopped is not None else child.returncode), text, stopped


def _read_status(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            status = json.load(handle)
        return status if isinstance(status, dict) else {}
    except (OSError, ValueError):  # not written yet (the child is starting), or being replaced
        return {}


def _past_limit(status: dict[str, Any], started: float, limit: float) -> dict[str, Any] | None:
    """The status of a target that has run longer than `limit`, with the seconds it ran; None while within it.
    The child stamps each target's start with its own clock (time.time()); before the first, start-up is timed."""
    if "target_started" in status:
        seconds = time.time() - float(status["target_started"])
        return dict(status, seconds=seconds) if seconds > limit else None
    seconds = time.monotonic() - started
    return {"check": "", "seconds": seconds} if seconds > max(limit, START_SECONDS) else None


def _stop(child: subprocess.Popen) -> None:
    """Kill the child and anything it started (its own process group on POSIX), then reap it."""
    try:
        if os.name == "posix":
            os.killpg(child.pid, signal.SIGKILL)
        else:
            child.kill()
    except (ProcessLookupError, PermissionError):
        pass
    child.wait()


def _read_lines(path: str) -> list[dict[str, Any]]:
    """The reports of the targets the child finished: one JSON object per line (a line cut by the kill is
    dropped)."""
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def _timed_out(entries: list[dict[str, Any]], finished: list[dict[str, Any]], stopped: dict[str, Any],
               limit: float, exitcode: int | None = None) -> Report:
    """The reports of the targets finished before the stop; on the target that was running, the JXU004 result (not
    verified) when it ran past the limit, or JXU001/JXU002 when the child died under it (`exitcode`: the user's code
    exited or crashed it), naming the check it was in; a JXN003 note on each target the child did not reach."""
    from .. import _rules as rules
    from .._core._outcomes import process_death_finding

    done = {item["entry"]: report_from_dict({"targets": item.get("targets", [])}).targets for item in finished
            if isinstance(item.get("entry"), int)}
    targets: list[TargetReport] = []
    running = stopped.get("entry")
    if not isinstance(running, int):  # stopped during the start-up: charged to the first target
        running = next((i for i in range(len(entries)) if i not in done), 0)
    for index, entry in enumerate(entries):
        if index in done:
            targets.extend(done[index])
            continue
        label = entry.get("label") or entry["ref"]
        report = TargetReport(label, "function", module=entry.get("module", ""))
        report.config_keys = list(entry.get("config_keys") or [entry["ref"]])
        if index == running:
            check = str(stopped.get("check") or "")
            if check:
                where = f"check `{check}` on {stopped.get('subject') or label}"
            elif stopped.get("phase"):
                where = str(stopped["phase"])
            elif "target_started" in stopped:
                where = "preparing its inputs (no check had started)"
            else:
                where = "the start of the sharding checks' child process (no target had started)"
            seconds = float(stopped.get("seconds", limit))
            report.anchors = [Location(**a) for a in stopped.get("anchors", [])]
            where_defined = stopped.get("location")
            location = Location(**where_defined) if where_defined else report.anchors[0] if report.anchors else None
            if exitcode is not None:
                died = process_death_finding(label, exitcode, check, where)
                died.location = location
                report.findings = [died]
                report.checks = [CheckResult(check or "sharding", "failed", seconds, died.message)]
            else:
                report.findings = [rules.USER_CODE_TIMED_OUT.finding(
                    location=location, target=label, seconds=seconds, limit=limit,
                    check=check or "sharding", where=where)]
                report.checks = [CheckResult(check or "sharding", "skipped", seconds,
                                             f"stopped after the {limit:g} s time limit")]
        else:
            stopped_label = entries[running].get("label") or entries[running]["ref"]
            why = ("ended the child process" if exitcode is not None
                   else f"ran past the {limit:g} s time limit")
            report.findings = [rules.CHECK_SKIPPED.finding(
                reason=f"sharding checks not run: the child process was stopped when {stopped_label} {why}",
                check="sharding")]
        targets.append(report)
    return Report(targets, jaxdiag_version=__version__)


def _internal(entries: list[dict[str, Any]], answer: dict[str, Any]) -> Report:
    detail = f"internal error in the sharding child process: {answer['internal_error']}\n{answer.get('traceback', '')}"
    return Report([TargetReport(e["ref"], "function", checks=[CheckResult("sharding", "error", 0.0, detail)])
                   for e in entries], jaxdiag_version=__version__)


def _only_known(cls: Any, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def report_from_dict(data: dict[str, Any]) -> Report:
    """The inverse of `Report.to_dict` (schema 1)."""
    targets = []
    for t in data.get("targets", []):
        findings = [Finding.from_dict(f) for f in t.get("findings", [])]
        checks = [CheckResult(**_only_known(CheckResult, c)) for c in t.get("checks", [])]
        report = TargetReport(t["target"], t["kind"], list(t.get("inputs", [])), checks, findings,
                              module=t.get("module", ""))
        report.anchors = [Location(**a) for a in t.get("anchors", [])]
        report.config_keys = list(t.get("config_keys", []))
        targets.append(report)
    return Report(targets, jaxdiag_version=data.get("jaxdiag_version", __version__),
                  jax_version=data.get("jax_version", ""))


# ---------------------------------------------------------------------------------------------------------------
# `jaxdiag check` with `sharding = true`
# ---------------------------------------------------------------------------------------------------------------


def lint_entries(lint: Any, found: list[Any]) -> list[dict[str, Any]]:
    """One child request entry per target `jaxdiag check` found, plus custom_partitioning objects (which only the
    sharding checks look at)."""
    entries = []
    seen = {id(f.obj) for f in found}
    for item in found:
        args, params, _ = lint._inputs_for(item)
        entries.append({"ref": _walked_ref(item.walked, item.attr), "label": item.label, "args": args,
                        "params": params, "config_keys": list(item.keys), "module": item.walked.label})
    from .._compat import _sharding as cs

    for walked in lint.discovery.walked:
        for attr, value in list(vars(walked.module).items()):
            if cs.is_custom_partitioning(value) and id(value) not in seen:
                seen.add(id(value))
                label = f"{walked.label}:{attr}"
                entries.append({"ref": _walked_ref(walked, attr), "label": label, "args": [], "params": {},
                                "config_keys": [label], "module": walked.label})
    return entries


def _walked_ref(walked: Any, attr: str) -> str:
    path = getattr(walked.module, "__file__", None)
    return f"{path}:{attr}" if walked.by_path and path else f"{walked.module.__name__}:{attr}"


def lint_sharding(lint: Any, found: list[Any], mesh: tuple[int, ...] = DEFAULT_MESH) -> list[TargetReport]:
    """The sharding reports of every target `jaxdiag check` found, unfiltered (check filters once)."""
    entries = lint_entries(lint, found)
    if not entries:
        return []
    # `jaxdiag check --timeout` (per target) bounds each target in the child too; no limit only when asked for (0)
    limit = getattr(getattr(lint, "settings", None), "timeout", None)
    report = run_in_child(entries, mesh, seed=lint.seed, app_dir=lint.app_dir, strict=False,
                          timeout=DEFAULT_TIMEOUT if limit is None else limit)
    for target in report.targets:
        target.target = f"{target.target} [sharding]"
    return report.targets
