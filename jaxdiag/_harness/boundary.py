"""The one boundary between jaxdiag and the user's code.

Every call into user code (a rule, an impl, the function under test, a module import) goes through `call_user`,
the only place in jaxdiag allowed to catch `Exception`. What the user's code raises comes back as
`UserResult.error`, for the caller to turn into a finding. Two kinds of exception pass through untouched:

- `Signal`: jaxdiag's own control flow raised *through* user code (the batching spy stops vmap once a rule's
  return is recorded as malformed). JAX may wrap it; the boundary finds it in the exception chain.
- `JaxdiagBug`: jaxdiag's own code failed while user code was on the stack (a spy's validation inside the
  user's vmap). `jaxdiag_code()` marks such code: whatever it raises becomes a `JaxdiagBug`, which the engine
  reports as an internal error (check status `error`, exit 3, `Report.ok` False) and never as the user's defect;
  only a stack a user rule filled by re-entering itself (a `RecursionError` with a user function repeating on it)
  stays the user's error.

What user code raises that is not an `Exception` (`SystemExit`, a `KeyboardInterrupt` nobody pressed, a custom
`BaseException`) is no finding about one rule: it unwinds every handler, JAX's included. It becomes a `UserAbort`,
which stops the target's checks and becomes a JXU001/JXU003 result for that target (`abort_of`). A real Ctrl-C
is a `KeyboardInterrupt` too: only where `user_interrupts()` is on (in a child process, which ignores SIGINT: its
parent handles Ctrl-C) is a `KeyboardInterrupt` the user code's own.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_CHAIN_LIMIT = 20  # links of __cause__/__context__ followed; JAX wraps at most a few times


class Signal(Exception):
    """Base of jaxdiag's control-flow exceptions raised through user code: never the user's error."""


class JaxdiagBug(Exception):
    """jaxdiag's own failure while user code was on the stack; carries the original exception."""

    def __init__(self, original: BaseException, where: str = "") -> None:
        super().__init__(f"{where + ': ' if where else ''}{type(original).__name__}: {original}")
        self.original = original
        self.where = where


class UserAbort(BaseException):
    """User code raised a `BaseException` that is not an `Exception`: the target's checks stop here. A
    `BaseException` itself, so that no `except Exception` (JAX's, the checks') swallows it on the way out."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(f"{type(original).__name__}: {original}")
        self.original = original


_USER_INTERRUPTS = False


def user_interrupts(on: bool | None = None) -> bool:
    """Whether a `KeyboardInterrupt` is the user code's own (set in child processes, which ignore SIGINT)."""
    global _USER_INTERRUPTS
    if on is not None:
        _USER_INTERRUPTS = on
    return _USER_INTERRUPTS


def abort_of(exc: BaseException) -> UserAbort | None:
    """The `UserAbort` a non-`Exception` escaping user code stands for; None for what must propagate as it is
    (jaxdiag's own control flow, and a `KeyboardInterrupt` that may be a real Ctrl-C)."""
    if isinstance(exc, UserAbort):
        return exc
    if isinstance(exc, Exception) or isinstance(exc, GeneratorExit):
        return None
    if isinstance(exc, KeyboardInterrupt) and not _USER_INTERRUPTS:
        return None
    return UserAbort(exc)


@dataclass
class Caught:
    """What `catch_abort` caught: the user's abort, or None when the body finished."""

    abort: UserAbort | None = None


@contextlib.contextmanager
def catch_abort() -> Iterator[Caught]:
    """Stop the body at a `UserAbort` (or a non-`Exception` that stands for one) and hand it over in `Caught`:
    where the engine and the `check` workers turn it into the target's result. Anything else propagates."""
    caught = Caught()
    try:
        yield caught
    except BaseException as exc:  # SystemExit & co. from user code: the caller reports it for the target
        abort = abort_of(exc)
        if abort is None:
            raise
        caught.abort = abort


@dataclass
class UserResult(Generic[T]):
    """What one call into user code gave: its value, or the exception it raised (then `value` is None)."""

    value: T = None  # type: ignore[assignment]  # typed as T: read it once `error` is None
    error: Exception | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    for _ in range(_CHAIN_LIMIT):
        if exc is None:
            return
        yield exc
        exc = exc.__cause__ or exc.__context__


def find_in_chain(exc: BaseException | None, kind: type[BaseException]) -> BaseException | None:
    """The first exception of type `kind` in `exc`'s cause/context chain (JAX may wrap what a rule raised)."""
    return next((e for e in _chain(exc) if isinstance(e, kind)), None)


def call_user(fn: Callable[..., T], /, *args: Any, quiet: bool = False, **kwargs: Any) -> UserResult[T]:
    """Call user code: `UserResult(value)` or `UserResult(error=exc)` for what it raised.

    `quiet=True` hides the warnings the user's code emits (they are not jaxdiag's output). A `Signal` or a
    `JaxdiagBug` anywhere in the exception chain is re-raised: neither is the user's error.
    """
    try:
        if quiet:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return UserResult(fn(*args, **kwargs))
        return UserResult(fn(*args, **kwargs))
    except Exception as exc:  # the one place that catches what user code raises
        for link in _chain(exc):
            if isinstance(link, (JaxdiagBug, Signal)):
                raise link  # noqa: B904 - the signal or bug itself, with its own cause, is what callers handle
            if isinstance(link, UserAbort):  # JAX wrapped a SystemExit it saw pass (rare): still an abort
                raise link  # noqa: B904 - the abort itself is what the engine reports
        return UserResult(error=exc)
    except BaseException as exc:  # SystemExit, a user KeyboardInterrupt, a custom BaseException: stop the target
        abort = abort_of(exc)
        if abort is None or abort is exc:
            raise
        raise abort from exc


@contextlib.contextmanager
def jaxdiag_code(where: str) -> Iterator[None]:
    """Mark jaxdiag's own code that runs while user code is on the stack (a spy's bookkeeping and validation):
    anything it raises, other than a `Signal`, is jaxdiag's bug and becomes a `JaxdiagBug`, except a
    `RecursionError` while one of the user's functions repeats on the stack (`_user_recursion`): the user's rule
    re-entering itself filled the stack, and it ran out in jaxdiag's frame by chance."""
    try:
        yield
    except (JaxdiagBug, Signal):
        raise
    except RecursionError as exc:
        if not _user_recursion():
            raise JaxdiagBug(exc, where) from exc
        raise  # the stack ran out here, but a user rule re-entering itself filled it: the user's error
    except Exception as exc:  # jaxdiag's own failure: never reported as the user's
        raise JaxdiagBug(exc, where) from exc


# How often one function of the user's must be on the stack for a RecursionError to be its unbounded recursion
_USER_RECURSION = 8


def _user_recursion() -> bool:
    """Whether one function outside jaxdiag and JAX is on the current stack `_USER_RECURSION` times or more: a rule
    that re-enters itself through JAX (a batching rule calling `jax.vmap` of its own primitive, a JVP rule calling
    `jax.jvp` of its own function) until the interpreter's limit, wherever the last frame happens to be."""
    import sys
    from collections import Counter

    seen: Counter[Any] = Counter()
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if not _library_file(code.co_filename):
            seen[code] += 1
            if seen[code] >= _USER_RECURSION:
                return True
        frame = frame.f_back  # type: ignore[assignment]  # None ends the walk
    return False


def _library_file(path: str) -> bool:
    """jaxdiag's, JAX's or the standard library's code (their frames repeat on any deep stack), or no file."""
    packages, stdlib = _library_roots()
    return (path.startswith("<") or path.startswith(packages)
            or (path.startswith(stdlib) and "site-packages" not in path and "dist-packages" not in path))


@functools.cache
def _library_roots() -> tuple[tuple[str, ...], str]:
    """(jaxdiag's, JAX's and jaxlib's folders, the standard library's; each ending in a separator)."""
    import os
    import sys
    import sysconfig

    files = [__file__] + [getattr(sys.modules.get(name), "__file__", None) for name in ("jax", "jaxlib")]
    roots = [os.path.dirname(os.path.abspath(file)) for file in files if file]
    roots[0] = os.path.dirname(roots[0])  # this module's package's parent: all of jaxdiag
    return tuple(os.path.join(root, "") for root in roots), os.path.join(sysconfig.get_paths()["stdlib"], "")
