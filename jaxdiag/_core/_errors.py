"""Exceptions that the CLI turns into exit codes."""

from __future__ import annotations

import os
import re
import traceback


class UsageError(Exception):
    """Bad input from the user (target, spec, option, configuration): one line on stderr, exit 2."""


class TargetLoadError(UsageError):
    """The target could not be imported or is not something jaxdiag can check."""


class InferenceError(UsageError):
    """Example inputs could not be inferred; `jaxdiag check` turns this into a JXR903 note instead of exit 2."""

    def __init__(self, message: str, label: str = "", tried: "list[str] | None" = None, last_error: str = "",
                 arity: int = 1, static: "dict[int, str] | None" = None):
        super().__init__(message)
        # positions that take a static Python value, with the literal to suggest for each (never an array SPEC)
        self.static = dict(static or {})
        self.label = label
        self.tried = list(tried or [])
        self.last_error = last_error
        self.arity = arity
        self.call_sites: list[str] = []  # call sites tried to reach the target (`_call_sites`), said in JXN012
        self.skipped = ""  # a way of checking it that this JAX release lacks (said as JXN003 beside JXN004)


def dependency_failure(exc: BaseException) -> str | None:
    """`ModuleNotFoundError: No module named 'x'` when `exc` is, or was raised from, a failed import.

    Libraries wrap a missing optional backend in an exception of their own (`raise KernelError(...) from exc` around
    `import numba`), so the type of what reaches jaxdiag does not say it; the chain of causes does. The text starts
    with the import failure's own type so that every reader of an error text recognises it alike."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or current.__context__
    # the module that is missing, where the chain has it: a package's own `raise ImportError("needs PyTorch") from
    # e` around `import torch` names the dependency only in its cause
    imports: list[ImportError] = ([e for e in chain if isinstance(e, ModuleNotFoundError)]
               or [e for e in chain if isinstance(e, ImportError)])
    if imports:
        current = imports[0]
        kind = "ModuleNotFoundError" if isinstance(current, ModuleNotFoundError) else "ImportError"
        message = str(current).splitlines()[0] if str(current) else ""
        outer = "" if current is exc else f" (raised as {type(exc).__name__})"
        return f"{kind}: {message}{outer}"
    # JAX's traceback filtering replaces the cause of what a rule raises: the wrapper's text still names the import
    named = _NO_MODULE.search(str(exc))
    return f"ModuleNotFoundError: {named.group(1)} (raised as {type(exc).__name__})" if named else None


_NO_MODULE = re.compile(r"\b(?:ModuleNotFoundError|ImportError): (No module named '[\w.]+')")


_OWN_FILES = f"{os.sep}jaxdiag{os.sep}"
_OWN_FRAMES_KEPT = 4


def internal_error_detail(check_name: str, exc: BaseException) -> str:
    """What a report keeps of jaxdiag's own bug in a check: the exception, jaxdiag's innermost frames (where the bug
    is, even when it surfaced deep inside JAX, e.g. `bool()` of an array) and the frame that raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if _OWN_FILES in f.filename][-_OWN_FRAMES_KEPT:]
    shown = own + [f for f in frames[-1:] if f not in own]
    return (f"internal error in check {check_name}: {type(exc).__name__}: {exc}\n"
            + "".join(traceback.format_list(shown)))
