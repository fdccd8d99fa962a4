"""jaxdiag: diagnose JAX extension code (custom primitives and their rules, custom_vjp, custom_jvp, custom_vmap).

The public API returns a `Report`; the CLI (`jaxdiag ...`) is a thin layer over it. Names are imported on first
use, so `import jaxdiag` (and the pytest plugin that pytest loads into every session) does not import JAX.

PYTEST_DONT_REWRITE: pytest rewrites the asserts of a plugin's package, and warns ("Module already imported so
cannot be rewritten; jaxdiag") when the package was imported first, as under `jaxdiag record -- pytest`, whose
recorder imports it at interpreter start. jaxdiag's own asserts are not the user's tests: never rewritten.
"""

import typing as _typing

__version__ = "0.1.0"

# Public name -> the private module that defines it.
_EXPORTS = {
    "check_all": "_api",
    "check_batching": "_api",
    "check_grad": "_api",
    "check_sharding": "_mesh._sharding",
    "check_module": "_jobs._lint",
    "UsageError": "_core._errors",
    "TargetLoadError": "_core._errors",
    "CheckResult": "_core._report",
    "Finding": "_core._report",
    "Location": "_core._report",
    "Problem": "_core._report",
    "Report": "_core._report",
    "RULES": "_rules",
    "Rule": "_rules",
}

if _typing.TYPE_CHECKING:
    from ._api import check_all as check_all
    from ._api import check_batching as check_batching
    from ._api import check_grad as check_grad
    from ._mesh._sharding import check_sharding as check_sharding
    from ._core._errors import TargetLoadError as TargetLoadError
    from ._core._errors import UsageError as UsageError
    from ._jobs._lint import check_module as check_module
    from ._core._report import CheckResult as CheckResult
    from ._core._report import Finding as Finding
    from ._core._report import Location as Location
    from ._core._report import Problem as Problem
    from ._core._report import Report as Report
    from ._rules import RULES as RULES
    from ._rules import Rule as Rule

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> _typing.Any:
    if name in _EXPORTS:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'jaxdiag' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public API only: what `__all__` lists, each name once."""
    return sorted(__all__)
