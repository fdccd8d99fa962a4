"""Exceptions that the CLI turns into exit codes."""

from __future__ import annotations


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
