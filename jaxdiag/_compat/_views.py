"""Printing jaxprs with their source lines (`--show-jaxpr`) and lowering for a platform this machine may not have
(`--platforms`): JAX's pretty-printer options and the cross-platform lowering API changed across releases."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ._registries import lowering_rule


def pretty_jaxpr(closed: Any) -> str:
    """The jaxpr text with each equation's source location (`# file:line:col (function)`) when JAX can print it."""
    printer = getattr(closed, "pretty_print", None)
    if printer is not None:
        params = inspect.signature(printer).parameters
        wanted = (("source_info", True), ("name_stack", False), ("width", 50))  # narrow: one equation a line
        kwargs = {k: v for k, v in wanted if k in params or any(p.kind is p.VAR_KEYWORD for p in params.values())}
        try:
            return str(printer(**kwargs))
        except TypeError:  # an older printer that rejects an option: plain text below
            return str(closed)
    return str(closed)


def lower_for_platform(fn: Callable, args: tuple, platform: str) -> None:
    """Lower `jax.jit(fn)` on `args` for `platform` without needing that device (cross-platform lowering); raises
    what JAX raises, typically NotImplementedError naming a primitive without a lowering for it."""
    import jax

    jitted = jax.jit(fn)
    trace = getattr(jitted, "trace", None)
    if trace is not None:
        traced = trace(*args)
        try:
            traced.lower(lowering_platforms=(platform,))
            return
        except TypeError as exc:  # a release whose Traced.lower takes no lowering_platforms
            if "lowering_platforms" not in str(exc):
                raise
    # no cross-platform lowering on this JAX: only the registry can tell
    if not has_platform_rule_for_all(fn, args, platform):
        raise NotImplementedError(f"no lowering registered for platform {platform}")


def has_platform_rule_for_all(fn: Callable, args: tuple, platform: str) -> bool:
    """Fallback when JAX cannot lower for another platform: every user primitive in the jaxpr has a rule for
    `platform` (or a platform-independent one)."""
    import jax

    from ._jaxprs import iter_eqns
    from ._registries import is_builtin_primitive

    closed = jax.make_jaxpr(fn)(*args)
    for eqn in iter_eqns(closed):
        prim = eqn.primitive
        if not is_builtin_primitive(prim) and lowering_rule(prim, platform) is None:
            return False
    return True
