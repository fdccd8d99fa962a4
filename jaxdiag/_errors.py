"""Exceptions that the CLI turns into exit codes."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user (target, spec, option, configuration): one line on stderr, exit 2."""


class TargetLoadError(UsageError):
    """The target could not be imported or is not something jaxdiag can check."""
