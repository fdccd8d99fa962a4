"""The one boundary between jaxdiag and the user's code.

Every call into user code (a rule, an impl, the function under test, a module import) goes through `call_user`,
the only place in jaxdiag allowed to catch `Exception`. What the user's code raises comes back as
`UserResult.error`, for the caller to turn into a finding. Two kinds of exception pass through untouched:

- `Signal`: jaxdiag's own control flow raised *through* user code (the batching spy stops vmap once a rule's
  return is recorded as malformed). JAX may wrap it; the boundary finds it in the exception chain.
- `JaxdiagBug`: jaxdiag's own code failed while user code was on the stack (a spy's validation inside the
  user's vmap). `jaxdiag_code()` marks such code: whatever it raises becomes a `JaxdiagBug`, which the engine
  reports as an internal error (check status `error`, exit 3, `Report.ok` False) and never as the user's defect.
"""

from __future__ import annotations

import contextlib
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
        return UserResult(error=exc)


@contextlib.contextmanager
def jaxdiag_code(where: str) -> Iterator[None]:
    """Mark jaxdiag's own code that runs while user code is on the stack (a spy's bookkeeping and validation):
    anything it raises, other than a `Signal`, is jaxdiag's bug and becomes a `JaxdiagBug`."""
    try:
        yield
    except (JaxdiagBug, Signal):
        raise
    except Exception as exc:  # jaxdiag's own failure: never reported as the user's
        raise JaxdiagBug(exc, where) from exc
