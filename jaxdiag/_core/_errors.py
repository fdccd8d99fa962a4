"""Exceptions that the CLI turns into exit codes."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user (target, spec, option, configuration): one line on stderr, exit 2."""


class TargetLoadError(UsageError):
    """The target could not be imported or is not something jaxdiag can check."""


class InferenceError(UsageError):
    """Example inputs could not be inferred; `jaxdiag check` turns this into a JXR903 note instead of exit 2."""

    def __init__(self, message: str, label: str = "", tried: "list[str] | None" = None, last_error: str = "",
                 arity: int = 1):
        super().__init__(message)
        self.label = label
        self.tried = list(tried or [])
        self.last_error = last_error
        self.arity = arity
