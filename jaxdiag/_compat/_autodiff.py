"""What the grad checks need: resolving positional arguments, the zeros and primals JAX's AD passes to rules
(`Zero`, `SymbolicZero`, `UndefinedPrimal`, float0), tracers, and spying on transpose rules.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from jax._src import core as _core
from jax._src.interpreters import ad as _ad

from ._base import CustomVJPPrimal, SymbolicZero, float0, tangent_dtype

# ---------------------------------------------------------------------------------------------------------------
# --- grad ---
# ---------------------------------------------------------------------------------------------------------------


def resolve_positional(fun: Callable, args: tuple, kwargs: dict | None = None) -> tuple:
    """`args`/`kwargs` bound to `fun`'s signature with defaults applied, as custom_jvp/custom_vjp do before calling
    rules (so `nondiff_argnums` may point at a defaulted parameter, and keyword arguments become positional).
    `args` unchanged when the signature cannot bind them."""
    try:
        from jax._src.api_util import resolve_kwargs

        return tuple(resolve_kwargs(fun, tuple(args), dict(kwargs or {})))
    except (ImportError, TypeError, ValueError):  # moved helper, or a signature the arguments do not bind to
        return tuple(args)


def tangent_aval(shape: tuple[int, ...], dtype: Any) -> Any:
    return _core.ShapedArray(tuple(shape), tangent_dtype(dtype))


def ad_zero(shape: tuple[int, ...], dtype: Any) -> Any:
    """The symbolic zero tangent/cotangent JAX passes to primitive rules for an input of this shape and dtype."""
    return _ad.Zero(tangent_aval(shape, dtype))


def symbolic_zero(shape: tuple[int, ...], dtype: Any) -> Any:
    """The `SymbolicZero` custom_jvp/custom_vjp rules receive with `symbolic_zeros=True`."""
    assert SymbolicZero is not None, "symbolic_zeros=True needs a JAX with SymbolicZero"
    return SymbolicZero(tangent_aval(shape, dtype))


def custom_vjp_primal(value: Any, perturbed: bool = True) -> Any:
    """What a custom_vjp fwd receives per argument with `symbolic_zeros=True`."""
    assert CustomVJPPrimal is not None, "symbolic_zeros=True needs a JAX with CustomVJPPrimal"
    return CustomVJPPrimal(value, perturbed)


def is_symbolic_zero(x: Any) -> bool:
    return type(x) is _ad.Zero or (SymbolicZero is not None and type(x) is SymbolicZero)


def float0_zeros(shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(tuple(shape), dtype=float0)


def is_tracer(x: Any) -> bool:
    return isinstance(x, _core.Tracer)


def is_unexpected_tracer_error(exc: BaseException) -> bool:
    return type(exc).__name__ == "UnexpectedTracerError"


def rule_user_functions(rule: Any) -> list[Callable | None]:
    """The user's functions behind a registered JVP/transpose rule: the per-argument rules of `ad.defjvp`,
    `ad.defjvp2` and `ad.defbilinear` (None where an argument has none), the rule of `ad.deflinear2`, or [rule]."""
    if isinstance(rule, functools.partial):
        name = getattr(rule.func, "__name__", "")
        if name in ("standard_jvp", "standard_jvp2") and rule.args and isinstance(rule.args[0], (tuple, list)):
            return list(rule.args[0])
        if name in ("linear_transpose", "linear_transpose2") and rule.args:
            return [rule.args[0]]
        if name == "bilinear_transpose" and len(rule.args) >= 2:
            return [rule.args[0], rule.args[1]]
        if name == "linear_jvp":  # ad.deflinear2: the JVP re-binds the primitive; the user wrote the transpose
            return []
    return [rule]


@contextlib.contextmanager
def spy_transpose_rule(prim: Any, wrap: Callable[[Callable], Callable]) -> Iterator[None]:
    """Route reverse-mode calls of `prim`'s transpose rule through `wrap(rule)` for the body.

    The wrapper sees `(ct, *args, **params)` exactly as JAX passes them (linear args are `UndefinedPrimal`, `ct`
    may be `ad.Zero`). The registry entries are restored on exit, even when the body raises. No-op for primitives
    without a plain rule.

    `ad.defbilinear` on jax >= 0.7 registers a GradAccum-style rule in `fancy_transposes`, which JAX prefers, *and*
    the plain `bilinear_transpose` of the same user rules in `primitive_transposes`. The fancy entry is taken out
    for the body, so reverse mode runs the plain rule, which JAX falls back to and the wrapper can see (otherwise
    a wrong bilinear transpose would pass unseen on those releases).
    """
    table = _ad.primitive_transposes
    if prim not in table:
        yield
        return
    fancy = getattr(_ad, "fancy_transposes", {})
    original = table[prim]
    fancy_original = fancy.get(prim)
    try:
        fancy.pop(prim, None)
        table[prim] = wrap(original)
        yield
    finally:
        table[prim] = original
        if fancy_original is not None:
            fancy[prim] = fancy_original


# Reverse mode traces with LinearizeTracer on newer JAX (jax.vjp through a custom_vjp), with JVPTracer on older ones.
_AD_TRACERS = tuple(t for t in (_ad.JVPTracer, getattr(_ad, "LinearizeTracer", None)) if t is not None)


def jvp_perturbed(x: Any) -> bool | None:
    """Whether JAX's autodiff perturbs `x` where a rule receives it: True for a JVP/linearize tracer with a non-zero
    tangent, False for a concrete value or such a tracer whose tangent is a symbolic zero, None for any other tracer
    (a jaxpr being built inside scan or while_loop: its perturbation is decided later, out of sight)."""
    if isinstance(x, _AD_TRACERS):
        return not isinstance(x.tangent, _ad.Zero)
    return None if isinstance(x, _core.Tracer) else False


def jvp_primal_tangent(x: Any) -> tuple[np.ndarray, np.ndarray | None] | None:
    """(primal, tangent) of a forward-mode tracer whose values are concrete (eager `jax.jvp`): what a rule bound on
    it receives; the tangent None for a symbolic zero. None for anything else (a concrete value, a tracer of a jaxpr
    being built, a linearize tracer whose tangent is symbolic)."""
    if not isinstance(x, _ad.JVPTracer):
        return None
    primal, tangent = x.primal, x.tangent
    if isinstance(primal, _core.Tracer):
        return None
    if isinstance(tangent, _ad.Zero):
        return np.asarray(primal), None
    if isinstance(tangent, _core.Tracer):
        return None
    return np.asarray(primal), np.asarray(tangent)
