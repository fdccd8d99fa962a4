"""jaxdiag: diagnose JAX extension code (custom primitives and their rules, custom_vjp, custom_jvp, custom_vmap).

The public API returns a `Report`; the CLI (`jaxdiag ...`) is a thin layer over it.
"""

from __future__ import annotations

__version__ = "0.1.0"

from ._engine import check_all as check_all
from ._engine import check_batching as check_batching
from ._engine import check_grad as check_grad
from ._errors import UsageError as UsageError
from ._lint import check_module as check_module
from ._report import CheckResult as CheckResult
from ._report import Finding as Finding
from ._report import Location as Location
from ._report import Report as Report
from ._rules import RULES as RULES
from ._rules import Rule as Rule

__all__ = ["__version__", "check_all", "check_batching", "check_grad", "check_module", "UsageError", "CheckResult",
           "Finding", "Location", "Report", "RULES", "Rule"]
