"""`--format junit` (to be written)."""

from __future__ import annotations

from .._errors import UsageError
from .._report import Report


def render(report: Report) -> str:
    raise UsageError("--format junit is not available yet")
