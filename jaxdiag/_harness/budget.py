"""A time budget for speculative runs of user code.

To check a rule where its package calls it, jaxdiag runs the package's public functions that reach it on inferred
inputs (`_jobs/_call_sites`). One of those can compute for minutes (a waveform generator run eagerly, op by op,
under `jax.vmap` and `jax.grad`): a search that only looks for the rule's call must not spend the target's whole
time limit there, which would leave the rule unchecked (JXU004). `time_budget` stops the body with `OverBudget`
after its seconds; the search then checks the rule without that caller.

The interrupt is raised only while the user's own code runs (the signal handler looks at the frame it interrupted:
a user file, not JAX's, jaxdiag's or the standard library's), so that no `finally` block restoring JAX's trace state
or jaxdiag's registries is cut short; until then the alarm retries every few milliseconds. Raised again a second
later when the user's code swallowed it (`except Exception`). POSIX main thread only; elsewhere there is no budget.
An alarm someone else had set (a test runner's timeout) is handed back afterwards with the time it had left.
"""

from __future__ import annotations

import contextlib
import signal
import sysconfig
import threading
import time
from collections.abc import Iterator
from types import FrameType

from .boundary import Signal

_RETRY_SECONDS = 0.005  # the interrupted frame was not the user's: look again soon
_AGAIN_SECONDS = 1.0  # the user's code may have swallowed it: raise again
_STDLIB = tuple(p for p in {sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("platstdlib")} if p)


class OverBudget(Signal):
    """The body ran past its budget; raised through user code, never the user's error."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"stopped after {seconds:g} s")
        self.seconds = seconds


@contextlib.contextmanager
def time_budget(seconds: float | None) -> Iterator[None]:
    """Run the body; raise `OverBudget` in it once `seconds` have passed (None or 0: no budget)."""
    if not seconds or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if frame is None or not _users(frame):
            signal.setitimer(signal.ITIMER_REAL, _RETRY_SECONDS)
            return
        signal.setitimer(signal.ITIMER_REAL, _AGAIN_SECONDS)
        raise OverBudget(seconds)

    pending, interval = signal.getitimer(signal.ITIMER_REAL)  # someone else's alarm (pytest-timeout's): kept
    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if pending:  # re-armed for what was left of it (at once if it came due meanwhile)
            signal.setitimer(signal.ITIMER_REAL, max(pending - (time.monotonic() - started), 1e-3), interval)


def _users(frame: FrameType) -> bool:
    from .._core._locate import is_user_file

    filename = frame.f_code.co_filename
    stdlib = filename.startswith(_STDLIB) and "-packages" not in filename  # a system-wide site-packages is not
    return is_user_file(filename) and not stdlib and not filename.startswith("<")
