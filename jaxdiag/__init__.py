"""jaxdiag: diagnose JAX extension code (custom primitives and their rules, custom_vjp, custom_jvp, custom_vmap).

The public API returns a `Report`; the CLI (`jaxdiag ...`) is a thin layer over it. Names are imported on first
use, so `import jaxdiag` (and the pytest plugin that pytest loads into every session) does not import JAX.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "check_all": "._engine",
    "check_batching": "._engine",
    "check_grad": "._engine",
    "check_sharding": "._sharding",
    "check_module": "._lint",
    "UsageError": "._errors",
    "CheckResult": "._report",
    "Finding": "._report",
    "Location": "._report",
    "Problem": "._report",
    "Report": "._report",
    "RULES": "._rules",
    "Rule": "._rules",
}

if TYPE_CHECKING:
    from ._engine import check_all as check_all
    from ._engine import check_batching as check_batching
    from ._engine import check_grad as check_grad
    from ._sharding import check_sharding as check_sharding
    from ._errors import UsageError as UsageError
    from ._lint import check_module as check_module
    from ._report import CheckResult as CheckResult
    from ._report import Finding as Finding
    from ._report import Location as Location
    from ._report import Problem as Problem
    from ._report import Report as Report
    from ._rules import RULES as RULES
    from ._rules import Rule as Rule


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'jaxdiag' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = ["__version__", *_EXPORTS]
