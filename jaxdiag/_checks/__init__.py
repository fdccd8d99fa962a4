"""Every check, in the order they run: the `CHECKS` of each family's modules, families and modules in the order
the registry of commands (`jaxdiag._core._commands.FAMILIES`) lists them. A check yields `Finding`s built from the rule
catalog (`jaxdiag._rules`) and never touches JAX internals except through `jaxdiag._compat`."""

from __future__ import annotations

import importlib

from .._core import _commands
from ._base import Check


def family_checks(family: _commands.Family) -> list[Check]:
    """The checks of one family: its modules' `CHECKS`, in the registry's order."""
    found: list[Check] = []
    for name in family.modules:
        found.extend(importlib.import_module(f"{__name__}.{name}").CHECKS)
    return found


# The sharding family runs in its own child process (`_sharding_child`), not in the engine.
ALL_CHECKS: list[Check] = [c for f in _commands.engine_families() for c in family_checks(f)]
