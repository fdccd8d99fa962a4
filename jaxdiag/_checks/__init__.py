"""Every check, in the order they run: the `CHECKS` of each family's modules, families and modules in the order
the registry of commands (`jaxdiag._core._commands.FAMILIES`) lists them. A check yields `Finding`s built from the
rule catalog (`jaxdiag._rules`) and never touches JAX internals except through `jaxdiag._compat`.

A check module is imported only when a check of it can apply: its families come from the registry, the subject
kinds its checks cover from `KINDS` below (a superset is harmless; tests/test_speed_imports.py holds it to what the
modules declare), so `check_grad` on a custom_jvp never imports the batching or registration checks.
`ALL_CHECKS` (every check, every module imported) stays for the tools that list them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

from .._core import _commands

if TYPE_CHECKING:
    from ._base import Check, Options

_ALL_KINDS = frozenset({"primitive", "function", "custom_jvp", "custom_vjp", "custom_vmap"})

# The subject kinds each module's checks cover; a module not listed (a new family's) is tried on every kind.
KINDS: dict[str, frozenset[str]] = {
    "_registration": frozenset({"function", "primitive"}),
    "_platforms": frozenset({"primitive"}),
    "_portability": frozenset({"custom_vmap", "primitive", "custom_jvp", "custom_vjp"}),
    "_batching": frozenset({"function", "primitive"}),
    "_custom_vmap": frozenset({"custom_vmap"}),
    "_ffi": frozenset({"function"}),
    "_custom_vjp": frozenset({"custom_vjp", "custom_jvp"}),
    "_custom_jvp": frozenset({"custom_jvp", "custom_vjp", "primitive"}),
    "_primitive_ad": frozenset({"primitive"}),
    "_solves": frozenset({"function"}),
    "_grad": _ALL_KINDS,
}


class CheckModule(NamedTuple):
    module: str  # relative to this package
    families: frozenset[str]  # the registry's families listing it (the Check.family values of its checks)
    kinds: frozenset[str]  # the union of its checks' subject kinds


def _modules() -> tuple[CheckModule, ...]:
    """Every engine check module once, in run order (its first appearance over the registry's families)."""
    order: dict[str, set[str]] = {}
    for family in _commands.engine_families():
        for module in family.modules:
            order.setdefault(module, set()).add(family.name)
    return tuple(CheckModule(m, frozenset(f), KINDS.get(m, _ALL_KINDS)) for m, f in order.items())


MODULES = _modules()


def module_checks(module: CheckModule) -> list[Check]:
    """The module's checks, importing it on first use."""
    return list(importlib.import_module(f"{__name__}.{module.module}").CHECKS)


def checks_for(kind: str, options: Options) -> Iterator[Check]:
    """Every check that may apply to a subject of `kind` under `options`, in run order; a module none of whose
    checks can apply is never imported. The caller still asks each check `applies()`."""
    for module in MODULES:
        if kind in module.kinds and any(options.runs(f) for f in module.families):
            yield from module_checks(module)


def __getattr__(name: str) -> Any:
    if name == "ALL_CHECKS":  # every module imported: for listings and tests, never on a run's path
        return [chk for module in MODULES for chk in module_checks(module)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
