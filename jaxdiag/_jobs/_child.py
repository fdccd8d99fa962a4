"""The child side of the supervisor (`_supervisor.py`): the process where the user's code runs.

`main` is the entry point of the spawned process. It ignores SIGINT (the parent handles Ctrl-C and stops it), so a
`KeyboardInterrupt` here can only come from the user's code and is reported as theirs; it sends stdout and stderr
to files in the run's folder (nothing the user's code prints reaches the report), runs the command, sends back the
report as plain data, and ends with `os._exit`, so a thread the user's code left running cannot keep it alive
(`_contain.Watch` has reported it by then).

For `check`, before anything else runs here, it forks itself into the workers' fork server (`_worker_server`): it
holds JAX and jaxdiag already, and no user code has run yet.
"""

from __future__ import annotations

import contextlib
import faulthandler
import io
import os
import signal
import sys
import traceback
from typing import Any, Callable

from .._core._errors import UsageError

Send = Callable[[tuple[str, Any]], None]


def main(conn: Any, job: Any) -> None:
    from . import _worker_server, _workers
    from ._memory import exit_with_parent
    from .._harness import user_interrupts

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(os, "setpgid"):  # a group of its own: the parent kills it with every process it starts, at once
        os.setpgid(0, 0)
    _capture(job.capture)
    # a segfault or abort in native code leaves the Python stack in the captured output (the workers inherit it):
    # the supervisor reads the crashing module's line from it, and `-v` shows it
    faulthandler.enable()
    os.chdir(job.cwd)
    sys.path[:] = job.sys_path
    _environment(job.env)
    os.environ["JAXDIAG_RUN_DIR"] = job.run_dir  # scratch folders go there: the parent removes it on any exit
    _multiprocessing_folder(job.run_dir)
    if job.command == "check" and job.request.get("isolate"):
        # before any thread (exit_with_parent's) and any user code: this process is still fit to fork from
        _worker_server.start(_workers.WORKER_PRELOAD, close=(conn.fileno(),))
    exit_with_parent()
    user_interrupts(True)

    def send(message: tuple[str, Any]) -> None:
        conn.send(message)

    try:
        payload = COMMANDS[job.command](job, send)
    except UsageError as exc:
        payload = {"usage_error": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - the parent must hear why the run failed, as data
        payload = _last_words(job, exc)
    try:
        send(("done", payload))
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(0)


def _multiprocessing_folder(run_dir: str) -> None:
    """multiprocessing's own temporary folder (the socket of the workers' fork server) inside the run's folder:
    this process ends with `os._exit`, which skips multiprocessing's clean-up, and the parent removes the run's
    folder however this process ends."""
    import multiprocessing

    folder = os.path.join(run_dir, "mp")  # short: a socket path has a length limit
    os.makedirs(folder, exist_ok=True)
    config = vars(multiprocessing.current_process())["_config"]  # the process's settings, a private dict
    config["tempdir"] = folder  # where multiprocessing.util.get_temp_dir puts its folder


def _environment(env: dict[str, str]) -> None:
    """The parent's environment as it is now (the fork server's is from when it started), and the JAX flags it
    sets that JAX read at import (`JAX_ENABLE_X64=1` set after the server imported JAX)."""
    from .. import _compat

    changed = {k: v for k, v in env.items() if k.startswith("JAX_") and os.environ.get(k) != v}
    os.environ.clear()
    os.environ.update(env)
    _compat.apply_environment_flags(changed)


def _capture(paths: tuple[str, str]) -> None:
    """File descriptors 1 and 2 (Python's prints, C's printf, the workers this process starts) go to files."""
    for fd, path in zip((1, 2), paths):
        try:
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError:  # the parent is gone and removed the run's folder: nobody to answer
            os._exit(70)
        os.dup2(target, fd)
        os.close(target)


def _last_words(job: Any, exc: BaseException) -> dict[str, Any]:
    """A user abort outside any check (while a module of `check` was imported): the target's result; anything
    else is jaxdiag's own error."""
    from .._run import _contain
    from .._harness import abort_of
    from .._core._report import Report

    abort = abort_of(exc)
    if abort is not None:
        report = Report([_contain.abort_report(abort, job.label, job.kind, f"preparing {job.label}")])
        return {"report": report.to_full_dict()}
    # the exception first: a report shows a problem's first line ("Traceback (most recent call last):" told nothing)
    full = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
    return {"internal_error": f"internal error in jaxdiag: {type(exc).__name__}: {exc}\n{full}"}


def _progress(send: Send) -> None:
    """Tell the parent which check starts (for the time limit's message and the progress display)."""
    from .._run import _engine
    from . import _discovery, _parallel

    def started(subject: str, check: str, inputs: dict[str, Any]) -> None:
        send(("progress", {"event": "check", "target": subject, "check": check, "inputs": inputs}))

    def importing(what: str, label: str | None) -> None:  # label None: the import returned
        send(("progress", {"event": "importing", "module": what, "label": label}))

    _engine.on_check_start = started
    _parallel.on_progress = lambda event: send(("progress", event))
    _discovery.on_import = importing


def diagnose(job: Any, send: Send) -> dict[str, Any]:
    """`batching`, `grad` and the API's `isolate=True`: one target, through the engine."""
    from .._run import _engine
    from .._checks._base import Options

    request = job.request
    _progress(send)
    send(("progress", {"event": "discovered", "total": 1}))
    opts = Options.for_command(request.command, seed=request.seed, **request.options)
    report = _engine.run(request.target, request.args, request.params, opts, select=request.select,
                         ignore=request.ignore, app_dir=request.app_dir, per_target_ignore=request.per_target,
                         allow_unchecked=request.allow_unchecked)
    return _with_views(report, job)


def check(job: Any, send: Send) -> dict[str, Any]:
    """`jaxdiag check`: discovery here, each target in a worker process (`_parallel`)."""
    from . import _lint

    _progress(send)
    report = _lint.check_paths(**job.request)
    return _with_views(report, job)


def _with_views(report: Any, job: Any) -> dict[str, Any]:
    """`--diff`/`--fix`/`--repro` need the findings' live objects: done here, their output sent as text."""
    views = job.views
    payload: dict[str, Any] = {}
    if views.get("diff") or views.get("fix") or views.get("repro"):
        from .._run import _views

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            done = _views.deliver(report, views["format"], views.get("output"), diff=views.get("diff", False),
                                  fix=views.get("fix", False), repro=views.get("repro"))
        payload["views"] = {"stdout": out.getvalue(), "stderr": err.getvalue(), "done": done}
    payload["report"] = report.to_full_dict()
    return payload


COMMANDS: dict[str, Callable[[Any, Send], dict[str, Any]]] = {"diagnose": diagnose, "check": check}
