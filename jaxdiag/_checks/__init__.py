"""Every check, in the order they run. Each family module exposes `CHECKS`; a check yields `Finding`s built from the
rule catalog (`jaxdiag._rules`) and never touches JAX internals except through `jaxdiag._compat`.

A family module is imported only when a check of it can apply: `FAMILIES` says, for each module in run order, which
command families and subject kinds its checks cover (a superset is harmless; tests/test_speed_imports.py holds it
to what the modules declare), so `check_grad` on a custom_jvp never imports the batching or registration checks.
`ALL_CHECKS` (every check, every module imported) stays for the tools that list them.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ._base import Check, Options


class Family(NamedTuple):
    module: str  # relative to this package
    families: frozenset[str]  # the Check.family values of its checks
    kinds: frozenset[str]  # the union of its checks' subject kinds


_ALL_KINDS = frozenset({"primitive", "function", "custom_jvp", "custom_vjp", "custom_vmap"})

FAMILIES: tuple[Family, ...] = (
    Family("_registration", frozenset({"batching"}), frozenset({"function", "primitive"})),
    Family("_platforms", frozenset({"batching"}), frozenset({"primitive"})),
    Family("_portability", frozenset({"batching", "grad"}),
           frozenset({"custom_vmap", "primitive", "custom_jvp", "custom_vjp"})),
    Family("_batching", frozenset({"batching"}), frozenset({"function", "primitive"})),
    Family("_custom_vmap", frozenset({"batching", "grad"}), frozenset({"custom_vmap"})),
    Family("_ffi", frozenset({"batching"}), frozenset({"function"})),
    Family("_custom_vjp", frozenset({"grad"}), frozenset({"custom_vjp", "custom_jvp"})),
    Family("_custom_jvp", frozenset({"grad"}), frozenset({"custom_jvp", "custom_vjp", "primitive"})),
    Family("_primitive_ad", frozenset({"grad"}), frozenset({"primitive"})),
    Family("_grad", frozenset({"grad"}), _ALL_KINDS),
)


def family_checks(family: Family) -> list[Check]:
    """The family module's checks, importing it on first use."""
    return list(importlib.import_module(f"{__name__}.{family.module}").CHECKS)


def checks_for(kind: str, options: Options) -> Iterator[Check]:
    """Every check that may apply to a subject of `kind` under `options`, in run order; a family module none of whose
    checks can apply is never imported. The caller still asks each check `applies()`."""
    for family in FAMILIES:
        if kind in family.kinds and any(options.runs(f) for f in family.families):
            yield from family_checks(family)


def __getattr__(name: str) -> Any:
    if name == "ALL_CHECKS":  # every family imported: for listings and tests, never on a run's path
        return [chk for family in FAMILIES for chk in family_checks(family)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
