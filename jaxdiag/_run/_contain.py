"""What the user's code does to the process that checks it, turned into that target's results (child side).

- `abort_report`: user code raised a `BaseException` that is not an `Exception` (`SystemExit`, a `KeyboardInterrupt`
  in a child, a custom one): the target's checks stop and it gets a blocking JXU001/JXU003 finding at the deepest
  line of the user's code in the traceback.
- `Watch`: around one target, the non-daemon threads its user code left running (JXU005) and JAX's global state
  it changed (JXU006: config flags, JAX/XLA environment variables, rules of JAX's own primitives), which is then
  restored, so that the targets after it are checked as if nothing happened.

What kills the process itself (`os._exit`, a segfault, a hang) cannot be seen from inside it: the supervisor
(`_supervisor.py`) and the `check` workers' pool (`_parallel.py`) turn those into JXU001/JXU002/JXU004.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from .. import _compat
from .._core import _locate
from .. import _rules as rules
from .._harness import UserAbort
from .._core._report import Finding, Location, TargetReport


def _user_line(tb: TracebackType | None) -> Location | None:
    """The deepest traceback line in the user's code."""
    found = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename and not code.co_filename.startswith("<") and _locate.is_user_file(code.co_filename):
            found = Location(_locate.relative_path(code.co_filename), tb.tb_lineno, code.co_name)
        tb = tb.tb_next
    return found


def _how(original: BaseException) -> str:
    if isinstance(original, SystemExit):
        return f"user code raised SystemExit({original.code!r}) (sys.exit or raise SystemExit)"
    return f"user code raised {type(original).__name__}({', '.join(map(repr, original.args))})"


def abort_finding(abort: UserAbort, target: str, where: str) -> Finding:
    """The blocking finding for an abort seen while running `where` (e.g. "check `batching-vs-loop` on f")."""
    original = abort.original
    location = _user_line(original.__traceback__)
    at = f" (at {location})" if location else ""
    check = where.split("`")[1] if where.count("`") >= 2 else where
    rule = rules.USER_CODE_EXITED if isinstance(original, SystemExit) else rules.USER_CODE_RAISED_BASE_EXCEPTION
    return rule.finding(location=location, target=target, how=_how(original), where=where, check=check, at=at)


def abort_report(abort: UserAbort, target: str, kind: str, where: str) -> TargetReport:
    """A target whose checks an abort stopped before any report existed (while loading or choosing inputs)."""
    return TargetReport(target, kind, findings=[abort_finding(abort, target, where)])


class Watch:
    """Threads and JAX state before a target; `finish` reports and undoes what the target left behind."""

    def __init__(self) -> None:
        self.threads = {t.ident for t in threading.enumerate()}
        self.state = self.loaded_state = _compat.global_state()

    def loaded(self) -> None:
        """The target's modules are imported: what their import set (`jax.config.update("jax_enable_x64", True)` in
        a package's `__init__`, as JXU006's own fix advises) is the package's configuration, not a change its checks
        made. It is not reported, and is still undone by `finish`."""
        self.loaded_state = _compat.global_state()

    def left_threads(self) -> list[threading.Thread]:
        """Non-daemon threads started since, still alive, that would keep the process from exiting. The workers of a
        `concurrent.futures` pool are not among them: the pool joins them at exit by itself."""
        import concurrent.futures.thread as pool

        managed = set(getattr(pool, "_threads_queues", {}))
        return [t for t in threading.enumerate()
                if t.is_alive() and not t.daemon and t.ident not in self.threads and t is not threading.main_thread()
                and t not in managed]

    def finish(self, target: str) -> list[Finding]:
        """JXU005/JXU006 findings for `target`; JAX's state is restored either way."""
        out: list[Finding] = []
        threads = self.left_threads()
        if threads:
            names = ", ".join(f"{t.name!r}" for t in threads[:5]) + (" ..." if len(threads) > 5 else "")
            out.append(rules.USER_CODE_LEFT_THREADS.finding(target=target, count=len(threads), threads=names))
        after = _compat.global_state()
        changes = _compat.state_changes(self.loaded_state, after)
        failed = _compat.restore_global_state(self.state) if _compat.state_changes(self.state, after) else []
        if changes:
            text = "; ".join(changes[:6]) + (" ..." if len(changes) > 6 else "")
            if failed:
                text += f" (could not restore: {', '.join(failed)})"
            out.append(rules.USER_CODE_CHANGED_STATE.finding(target=target, changes=text))
        return out


def attach(reports: list[TargetReport], findings: list[Finding]) -> None:
    """Put a target's containment findings on its first report (the target itself, before its nested rules)."""
    if findings and reports:
        reports[0].findings.extend(findings)


def describe_where(check: Any, subject: str) -> str:
    return f"check `{check}` on {subject}" if check else f"preparing {subject} (no check had started)"
