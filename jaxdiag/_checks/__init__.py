"""Every check: the `CHECKS` of each family's modules, families and modules in the order the registry of commands
(`jaxdiag._core._commands.FAMILIES`) lists them. A check yields `Finding`s built from the rule catalog
(`jaxdiag._rules`) and never touches JAX internals except through `jaxdiag._compat`.

The order checks run in comes from what they declare they need, read and provide (`Check`): `order_checks` sorts
a subject's applicable checks topologically, and keeps the registry's order only where nothing constrains it.

A check module is imported only when a check of it can apply: its families come from the registry, the subject
kinds its checks cover from `KINDS` below (a superset is harmless; tests/test_speed_imports.py holds it to what the
modules declare), so `check_grad` on a custom_jvp never imports the batching or registration checks.
`ALL_CHECKS` (every check, every module imported) stays for the tools that list them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection, Iterator, Sequence
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


# What each module's checks provide (`Check.provides`), so that a run imports a module only when a check of it runs
# or must run first: a superset is harmless; tests/test_check_order.py holds it to what the modules declare.
PROVIDES: dict[str, frozenset[str]] = {
    "_registration": frozenset({"jit_broken"}),
    "_custom_vjp": frozenset({"grad.fwd", "grad.bwd_full", "grad.eager_grad", "grad.blocked.vjp-fwd",
                              "grad.blocked.vjp-bwd-structure", "grad.blocked.vjp-cotangents",
                              "grad.blocked.vjp-linearity", "grad.second_order_moot"}),
    "_custom_jvp": frozenset({"grad.jvp_tangents", "grad.reported_errors", "grad.blocked.jvp-rule-output",
                              "grad.blocked.jvp-linearity", "grad.blocked.jvp-symbolic-zeros",
                              "grad.second_order_moot", "grad.second_order_held", "grad.reverse_nonfinite",
                              "grad.reverse_only"}),
    "_primitive_ad": frozenset({"grad.eager_grad", "grad.blocked.primitive-transpose"}),
    "_solves": frozenset({"grad.blocked.custom-solves"}),
    "_grad": frozenset({"grad.blocked.function-grad", "grad.second_order_moot"}),
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


class CheckOrderError(RuntimeError):
    """The checks' declarations cannot be met: a cycle, or a need no applicable check provides. jaxdiag's own bug
    (exit 3), never the user's."""


def order_checks(checks: Sequence[Check], only: Collection[str] | None = None) -> list[Check]:
    """`checks` (those applying to one subject) in run order: each after every other check providing what it
    needs or reads, otherwise in the order given (the registry's). `only`: just the checks of those names, plus the
    checks providing what they need (transitively): a retry of one check brings back what it cannot run without."""
    chosen = list(checks) if only is None else _with_needs(checks, only)
    providers: dict[str, list[Check]] = {}
    for chk in chosen:
        for name in chk.provides:
            providers.setdefault(name, []).append(chk)
    unmet = sorted(f"{chk.name} needs {name}" for chk in chosen for name in chk.needs
                   if not [p for p in providers.get(name, []) if p is not chk])
    if unmet:
        raise CheckOrderError(f"no applicable check provides what another needs: {'; '.join(unmet)}")
    after = {chk.name: {p.name for name in chk.needs | chk.reads for p in providers.get(name, []) if p is not chk}
             for chk in chosen}
    return _stable_topological(chosen, after)


def lazy_ordered_checks(kind: str, options: Options, keep: Callable[[Check], bool]) -> Iterator[Check]:
    """`order_checks` over `checks_for(kind, options)` (those `keep` accepts), importing a module only when one of
    its checks is next or provides what the next one needs or reads (`PROVIDES`): the same order, and a run that
    stops early (the first check's progress, a subject that ends the run) has not imported every family."""
    modules = [m for m in MODULES if kind in m.kinds and any(options.runs(f) for f in m.families)]
    loaded: dict[int, list[Check]] = {}
    done: set[str] = set()
    prefix = 0  # modules[:prefix] hold the candidates: every check after them comes later in the registry's order

    def load(i: int) -> list[Check]:
        if i not in loaded:
            loaded[i] = [chk for chk in module_checks(modules[i]) if keep(chk)]
        return loaded[i]

    while True:
        ready = next((chk for i in range(prefix) for chk in load(i)
                      if chk.name not in done and _predecessors_done(chk, modules, load, done)), None)
        if ready is not None:
            done.add(ready.name)
            yield ready
        elif prefix < len(modules):
            prefix += 1
        else:
            left = [chk for i in range(prefix) for chk in load(i) if chk.name not in done]
            if left:
                _stable_topological(left, {chk.name: {p.name for p in _providers(chk, modules, load)} - done
                                           for chk in left})  # raises: a cycle
            return


def _providers(chk: Check, modules: list[CheckModule], load: Callable[[int], list[Check]]) -> list[Check]:
    names = chk.needs | chk.reads
    found = [p for i, m in enumerate(modules) if PROVIDES.get(m.module, frozenset()) & names
             for p in load(i) if p is not chk and p.provides & names]
    unmet = sorted(n for n in chk.needs if not any(n in p.provides for p in found))
    if unmet:
        raise CheckOrderError(f"no applicable check provides what another needs: {chk.name} needs "
                              f"{', '.join(unmet)}")
    return found


def _predecessors_done(chk: Check, modules: list[CheckModule], load: Callable[[int], list[Check]],
                       done: set[str]) -> bool:
    return all(p.name in done for p in _providers(chk, modules, load))


def _with_needs(checks: Sequence[Check], only: Collection[str]) -> list[Check]:
    wanted = set(only)
    while True:
        needed = {name for chk in checks if chk.name in wanted for name in chk.needs}
        more = {chk.name for chk in checks if chk.provides & needed} - wanted
        if not more:
            return [chk for chk in checks if chk.name in wanted]
        wanted |= more


def _stable_topological(checks: list[Check], after: dict[str, set[str]]) -> list[Check]:
    """Kahn's algorithm taking, each time, the first check (in the given order) whose predecessors all ran."""
    done: set[str] = set()
    out: list[Check] = []
    left = list(checks)
    while left:
        ready = next((chk for chk in left if after[chk.name] <= done), None)
        if ready is None:
            cycle = ", ".join(f"{chk.name} (after {', '.join(sorted(after[chk.name] - done))})" for chk in left)
            raise CheckOrderError(f"the checks' declared needs/reads/provides form a cycle: {cycle}")
        left.remove(ready)
        done.add(ready.name)
        out.append(ready)
    return out


def __getattr__(name: str) -> Any:
    if name == "ALL_CHECKS":  # every module imported: for listings and tests, never on a run's path
        return [chk for module in MODULES for chk in module_checks(module)]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
