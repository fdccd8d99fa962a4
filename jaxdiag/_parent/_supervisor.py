"""The supervisor: runs a command's user-code side in a child process and turns whatever happens there into a
report. Parent side: imports neither JAX nor the user's code.

The CLI (and the Python API with `isolate=True`) parses and validates in this process, then hands a `Job` to
`run`. The child (`_child.main`, forked from a `forkserver` that has imported JAX and jaxdiag once and never runs
user code, else spawned; never a plain fork: JAX is not fork-safe) loads the target, runs the checks and sends back
the report as plain data. It gets this process's working folder, `sys.path` and environment. The child's stdout and
stderr go to files in this run's temporary folder, so nothing the user's code prints reaches the report stream;
they come back as the target's captured output (shown with `-v`).

Whatever ends the child early is a result for the target, never a pass:
- it exits (`os._exit`, `sys.exit` outside a check) -> JXU001; a signal kills it (a segfault) -> JXU002;
- it dies importing a module of `check`'s walk -> with `--keep-going` the run starts again without that module
  (reported as the crash, the others checked: `_discovery.Discovery.crashed`), else the crash names the module;
- it runs past the time limit -> JXU004, naming the check it was in (the child reports each check it starts);
- the child cannot send its result -> the same, with what it printed.
`SystemExit` and other `BaseException`s raised inside a check, threads left running and changed JAX state are
seen by the child itself (`_contain.py`). Ctrl-C and SIGTERM stop the child, remove the run's temporary folder
(the child's XLA scratch cache among it) and exit 130/143 with one line.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from .._core._errors import UsageError
from .._core import _provenance
from .._core._filtering import mark_coverage
from .._core._outcomes import ended_early
from .._core._report import CheckResult, Report, TargetReport

# Seconds the child may take to exit after sending its result (it calls os._exit right away).
EXIT_GRACE = 10.0
POLL_SECONDS = 0.1
# What of the child's captured output is kept in a report (the end, where the error usually is).
OUTPUT_LIMIT = 20_000
# Modules whose import may kill `check`'s child before the run gives up walking again without them.
MAX_CRASHED_IMPORTS = 20


class Interrupted(BaseException):
    """Ctrl-C or SIGTERM reached the parent: stop the child, clean up, exit 130/143."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class Job:
    """What the child runs: `command` is a function name in `_child` ("diagnose", "check"), `request` its input
    (picklable: SPEC templates, literals, arrays as NumPy), `label`/`kind` name the target in a report made here
    when the child never answers."""

    command: str
    request: Any
    label: str
    kind: str = "function"
    cwd: str = field(default_factory=os.getcwd)
    sys_path: list[str] = field(default_factory=lambda: list(sys.path))
    run_dir: str = ""  # set by `run`: the child's capture files and scratch folders live here
    capture: tuple[str, str] = ("", "")  # set by `run`: the files the child's stdout and stderr go to
    views: dict[str, Any] = field(default_factory=dict)  # diff/fix/repro/format/output, done in the child
    env: dict[str, str] = field(default_factory=dict)  # set by `run`: this process's environment, for the child


@dataclass
class Answer:
    """What came back: the report, plus what `--diff`/`--fix`/`--repro` printed in the child (`views_done`: the
    output is complete, render nothing more)."""

    report: Report
    views_stdout: str = ""
    views_stderr: str = ""
    views_done: bool = False


Progress = Callable[[dict[str, Any]], None]


@dataclass
class ApiRequest:
    """What `_child.diagnose` reads of a request, for the Python API's `isolate=True` (the CLI's `Request` has the
    same fields)."""

    command: str
    target: str
    args: list[Any]
    params: dict[str, Any]
    seed: int
    select: list[str]
    ignore: list[str]
    app_dir: str
    options: dict[str, Any]
    per_target: list[str] = field(default_factory=list)
    allow_unchecked: dict[str, str] = field(default_factory=dict)


def check_isolated(command: str, target: Any, args: Any, params: dict[str, Any], options: dict[str, Any],
                   seed: int, select: Any, ignore: Any, app_dir: str, timeout: float | None) -> Report:
    """The Python API with `isolate=True`: the same run as the CLI's, in a child process. `target` must be
    importable by the child (a TARGET string, or an object defined at module level); arrays are sent as NumPy."""
    from .._core._filtering import Filter
    from .._mesh._sharding import target_ref

    Filter(select, ignore)  # unknown codes: a usage error before the child starts
    ref = target_ref(target)
    sent = [_plain(a) for a in args]
    request = ApiRequest(command, ref, sent, dict(params), seed, list(select), list(ignore), app_dir, dict(options))
    return run(Job("diagnose", request, label=ref), timeout=timeout).report


def _plain(value: Any) -> Any:
    """A JAX array as NumPy (picklable without JAX's device state); anything else as it is."""
    if hasattr(value, "__array__") and type(value).__module__.startswith(("jax", "jaxlib")):
        import numpy as np

        return np.asarray(value)
    return value


def run(job: Job, timeout: float | None = None, progress: Progress | None = None) -> Answer:
    """Run `job` in a child process; a UsageError the child hit is raised here (exit 2)."""
    while True:
        started = time.monotonic()
        payload, stopped, exitcode, output = _run_child(job, timeout, progress)
        if payload is not None:
            return answer_of(job, payload, output)
        if not _leave_out_crashed_import(job, stopped, exitcode, output):
            return Answer(_stopped_report(job, stopped, exitcode, output))
        if timeout:
            timeout = max(timeout - (time.monotonic() - started), POLL_SECONDS)


def _leave_out_crashed_import(job: Job, stopped: dict[str, Any], exitcode: int | None, output: str) -> bool:
    """`check --keep-going` whose child died importing a module: run again without it (True); else False."""
    request = job.request
    if job.command != "check" or not stopped.get("importing") or not isinstance(request, dict):
        return False
    crashed = request.setdefault("crashed_imports", {})
    if not request.get("keep_going") or len(crashed) >= MAX_CRASHED_IMPORTS:
        return False
    crashed[stopped["importing"]] = {"exitcode": exitcode, "seconds": stopped.get("seconds", 0.0),
                                     "frames": crash_frames(output), "output": output}
    return True


def crash_frames(output: str) -> list[tuple[str, int]]:
    """The Python frames faulthandler printed for the thread that crashed the child ("Current thread", else its
    last stack), most recent first (file, line); a blank line or the next thread's stack ends them."""
    start = output.rfind("Current thread")
    start = start if start >= 0 else output.rfind("(most recent call first):")
    if start < 0:
        return []
    block = re.split(r"\n\s*\n|\nThread 0x", output[start:])[0]
    return [(path, int(line)) for path, line in re.findall(r'^\s+File "(.+?)", line (\d+) in ', block,
                                                         flags=re.MULTILINE)]


def _run_child(job: Job, timeout: float | None, progress: Progress | None
               ) -> tuple[dict[str, Any] | None, dict[str, Any], int | None, str]:
    """(the child's payload or None, what it was doing when it stopped, its exit code, its captured output)."""
    with _run_dir() as run_dir, _signals_raise():
        job.run_dir = run_dir
        job.capture = capture_paths(run_dir)
        job.env = dict(os.environ)
        ctx = _context()
        receive, send = ctx.Pipe(duplex=False)
        from .._jobs import _child

        # not daemonic: `check`'s child starts the worker processes itself
        proc = ctx.Process(target=_child.main, args=(send, job), name="jaxdiag-child")
        try:
            proc.start()
        except OSError:  # no fork server here (its socket path is too long under a deep TMPDIR): spawn instead
            ctx = multiprocessing.get_context("spawn")
            receive, send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child.main, args=(send, job), name="jaxdiag-child")
            proc.start()
        send.close()
        payload = None
        try:
            payload, stopped = _wait(proc, receive, timeout, progress)
        finally:
            _stop(proc, EXIT_GRACE if payload is not None else 0.0)
            receive.close()
        output = _captured(run_dir)
    return payload, stopped, proc.exitcode, output


def answer_of(job: Job, payload: dict[str, Any], output: str = "") -> Answer:
    """The child's payload as an `Answer`; a usage error it hit is raised here (exit 2)."""
    if payload.get("usage_error") is not None:
        raise UsageError(payload["usage_error"])
    if payload.get("internal_error") is not None:
        return Answer(_internal_report(job, payload["internal_error"], output))
    report = Report.from_dict(payload["report"])
    if output and report.targets:
        report.targets[0].output = output
    views = payload.get("views") or {}
    return Answer(report, views.get("stdout", ""), views.get("stderr", ""), bool(views.get("done")))


# What the fork server imports once, before any user code: every child forked from it starts with JAX and all of
# jaxdiag loaded (about 0.6 s instead of 5 s for a spawned interpreter), and with nothing of any target's state.
PRELOAD = ["jaxdiag._jobs._preload"]


def _context() -> Any:
    """`forkserver` where the platform has it (the server never runs user code and never initialises an XLA
    backend: its children start clean), else `spawn`. Never plain `fork`: JAX is not fork-safe."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


def _wait(proc: Any, receive: Any, timeout: float | None, progress: Progress | None
          ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the child's payload, or None; what it was doing when it stopped: check, seconds, timed_out)."""
    started = last_tick = time.monotonic()
    doing: dict[str, Any] = {}
    while True:
        if progress is not None and time.monotonic() - last_tick > 1.0:  # elapsed times on the display move on
            last_tick = time.monotonic()
            progress({"event": "tick"})
        if receive.poll(POLL_SECONDS):
            try:
                kind, body = receive.recv()
            except (EOFError, OSError):  # the child died (its end of the pipe closed)
                return None, {**doing, "seconds": time.monotonic() - started}
            if kind == "done":
                return body, doing
            if kind == "progress":
                if body.get("event") == "importing":  # check's walk: the module to name if the child dies now
                    doing = {"importing": body["module"]} if body.get("label") is not None else {}
                    continue
                if body.get("event") == "check":
                    doing = {"check": body.get("check", ""), "subject": body.get("target", ""),
                             "inputs": body.get("inputs")}
                    if not doing["check"]:  # trying a candidate of inference: no check to show yet
                        continue
                if progress is not None:
                    progress(body)
            continue
        if not proc.is_alive():
            if receive.poll(0):  # it sent its last words just before exiting
                continue
            return None, {**doing, "seconds": time.monotonic() - started}
        if timeout and time.monotonic() - started > timeout:
            return None, {**doing, "seconds": time.monotonic() - started, "timed_out": timeout}


def _stop(proc: Any, grace: float) -> None:
    """The child exits by itself right after its answer (within `grace`); otherwise (a hang, the time limit,
    Ctrl-C) it is killed at once: it has nothing left to say, and must not print into the user's terminal while
    this process removes its folder. Then every process the child started (`check`'s workers, their fork server)
    is killed with it: they share its process group, and one still writing into the run's folder would put it
    back after it was removed."""
    proc.join(grace)
    if proc.is_alive():
        proc.kill()
        proc.join()
    _kill_group(proc.pid)


# Seconds to wait for the killed processes of the child's group to be gone, before the run's folder is removed.
GROUP_EXIT_SECONDS = 10.0


def _kill_group(pgid: int | None) -> None:
    """Kill the child's process group (the child made itself its leader, `_child.main`) and wait until none of it
    runs any more: a process killed in the middle of a write finishes that write first."""
    if pgid is None or not hasattr(os, "killpg"):
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # the group is empty (or the number is another user's now)
        return
    deadline = time.monotonic() + GROUP_EXIT_SECONDS
    while _group_runs(pgid) and time.monotonic() < deadline:
        time.sleep(0.02)


def _group_runs(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (zombies, which wait for whoever adopted them to reap them,
    do not). Where /proc is missing, a short wait stands in."""
    if not os.path.isdir("/proc/self"):
        time.sleep(0.2)
        return False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:  # it ended while we looked
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _stopped_report(job: Job, stopped: dict[str, Any], exitcode: int | None, output: str) -> Report:
    """The target's report when the child never answered: killed at the time limit, crashed, or exited."""
    check = stopped.get("check") or ""
    where = f"check `{check}` on {stopped.get('subject') or job.label}" if check else (
        f"importing {stopped['importing']} (pass --keep-going to check the other modules without it)"
        if stopped.get("importing") else f"preparing {job.label} (loading it, choosing inputs; no check had started)")
    seconds = float(stopped.get("seconds", 0.0))
    limit = (seconds, float(stopped["timed_out"])) if stopped.get("timed_out") else None
    finding, result = ended_early(job.label, check, where, exitcode, limit, seconds)
    finding.inputs = stopped.get("inputs")  # graded by them, as every finding is (`_provenance`)
    target = TargetReport(job.label, job.kind, checks=[result], findings=[finding], output=output,
                          config_keys=[job.label])
    mark_coverage(target)
    report = Report([target], jaxdiag_version=__version__)
    _provenance.grade(report)  # the child's own reports are graded where its filter applies; this one is made here
    return report


def _internal_report(job: Job, detail: str, output: str) -> Report:
    target = TargetReport(job.label, job.kind, checks=[CheckResult("engine", "error", 0.0, detail)], output=output)
    return Report([target], jaxdiag_version=__version__)


# ---------------------------------------------------------------------------------------------------------------
# The run's folder, captured output, signals
# ---------------------------------------------------------------------------------------------------------------


@contextmanager
def _run_dir() -> Iterator[str]:
    """A temporary folder for this run, removed whatever happens: the child's stdout/stderr files, the XLA scratch
    cache of `check --no-cache`."""
    folder = tempfile.mkdtemp(prefix="jaxdiag-run-")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def capture_paths(run_dir: str) -> tuple[str, str]:
    return os.path.join(run_dir, "stdout.txt"), os.path.join(run_dir, "stderr.txt")


def _captured(run_dir: str) -> str:
    parts = []
    for path, name in zip(capture_paths(run_dir), ("stdout", "stderr")):
        try:
            with open(path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - OUTPUT_LIMIT))
                text = handle.read().decode("utf-8", errors="replace")
        except OSError:
            continue
        if text.strip():
            cut = f"[... {size - OUTPUT_LIMIT} bytes cut ...]\n" if size > OUTPUT_LIMIT else ""
            parts.append(f"--- captured {name} ---\n{cut}{text.rstrip()}")
    return "\n".join(parts)


@contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGINT and SIGTERM raise `Interrupted` in this process while the child runs (main thread only)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted(signum)

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in saved:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, previous in saved.items():
            signal.signal(s, previous)
