"""`jaxdiag check`: discover targets in modules, packages and files, and run every check (to be written)."""

from __future__ import annotations

from typing import Any

from ._errors import UsageError
from ._report import Report


def check_paths(paths: list[str], **options: Any) -> Report:
    raise UsageError("jaxdiag check is not available yet")
