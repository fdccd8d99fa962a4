"""The only module that touches JAX internals.

Every private import, rule-registry access and version difference lives here, so a JAX release that moves
something breaks this one file. Feature detection is preferred over version comparison.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from typing import Any, Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters import ad, batching, mlir

try:  # jax >= 0.4.36
    from jax.extend.core import Primitive
except ImportError:  # pragma: no cover - very old JAX
    from jax.core import Primitive  # type: ignore[attr-defined,no-redef]

from jax._src import core as _core
from jax._src import custom_derivatives as _custom_derivatives
from jax._src.interpreters import ad as _ad
from jax._src.interpreters import batching as _batching
from jax._src.interpreters import mlir as _mlir

try:
    from jax._src import custom_batching as _custom_batching
except ImportError:  # pragma: no cover
    _custom_batching = None  # type: ignore[assignment]

JAX_VERSION: str = jax.__version__
try:
    import jaxlib

    JAXLIB_VERSION: str = getattr(jaxlib, "__version__", None) or jaxlib.version.__version__  # type: ignore[attr-defined]
except Exception:  # pragma: no cover
    JAXLIB_VERSION = "unknown"

float0 = jax.dtypes.float0
custom_vjp_type = _custom_derivatives.custom_vjp
custom_jvp_type = _custom_derivatives.custom_jvp
custom_vmap_type = getattr(_custom_batching, "custom_vmap", None)
ShapedArray = _core.ShapedArray
ClosedJaxpr = _core.ClosedJaxpr
Jaxpr = _core.Jaxpr
Zero = _ad.Zero
UndefinedPrimal = _ad.UndefinedPrimal
SymbolicZero = getattr(_custom_derivatives, "SymbolicZero", None)
CustomVJPPrimal = getattr(_custom_derivatives, "CustomVJPPrimal", None)
is_undefined_primal = _ad.is_undefined_primal
instantiate_zeros = _ad.instantiate_zeros


def is_primitive(obj: Any) -> bool:
    return isinstance(obj, _core.Primitive)


def is_jit_wrapped(obj: Any) -> bool:
    """A `jax.jit` result: a PjitFunction (C++) or an older Python wrapper with `.lower`."""
    return callable(obj) and hasattr(obj, "lower") and hasattr(obj, "__wrapped__")


# ---------------------------------------------------------------------------------------------------------------
# Rule registries
# ---------------------------------------------------------------------------------------------------------------


def _batching_table() -> dict:
    """The dict vmap actually consults (a write-only proxy fronts it on newer JAX)."""
    fancy = getattr(_batching, "fancy_primitive_batchers", None)
    return fancy if isinstance(fancy, dict) else {}


def _legacy_batching_table() -> dict:
    table = getattr(_batching, "primitive_batchers", None)
    return table if isinstance(table, dict) else {}


def _closure_vars(fn: Any) -> dict[str, Any]:
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is None:
        return {}
    out = {}
    for name, cell in zip(code.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # empty cell
            pass
    return out


def batching_rule(prim: Any) -> Callable | None:
    """The user's batching rule for `prim`, unwrapped from the proxy JAX stores, or None."""
    legacy = _legacy_batching_table()
    if prim in legacy:
        return legacy[prim]
    rule = _batching_table().get(prim)
    if rule is None:
        return None
    inner = _closure_vars(rule).get("batcher")
    return inner if callable(inner) else rule


def batching_rule_is_fancy(prim: Any) -> bool:
    """True when the registered rule takes `axis_data` first (registered directly in the fancy table)."""
    if prim in _legacy_batching_table():
        return False
    rule = _batching_table().get(prim)
    return rule is not None and "batcher" not in _closure_vars(rule)


def has_batching_rule(prim: Any) -> bool:
    return prim in _batching_table() or prim in _legacy_batching_table()


@contextlib.contextmanager
def spy_batching_rule(prim: Any, on_return: Callable[[tuple, tuple, dict, Any], Any]) -> Iterator[None]:
    """Route every call vmap makes to `prim`'s batching rule through `on_return(vals, dims, params, result)`.

    `on_return` sees the rule's raw result before JAX does and returns what JAX should get (or raises). The
    registry entry is restored on exit, even when the body raises.
    """
    for table in (_legacy_batching_table(), _batching_table()):
        if prim in table:
            break
    else:
        yield
        return
    original = table[prim]
    fancy_signature = table is _batching_table() and table is not _legacy_batching_table()

    if fancy_signature:

        def spy(axis_data, vals, dims, **params):
            return on_return(tuple(vals), tuple(dims), params, original(axis_data, vals, dims, **params))

    else:

        def spy(vals, dims, **params):
            return on_return(tuple(vals), tuple(dims), params, original(vals, dims, **params))

    table[prim] = spy
    try:
        yield
    finally:
        table[prim] = original


def jvp_rule(prim: Any) -> Callable | None:
    return _ad.primitive_jvps.get(prim)


def transpose_rule(prim: Any) -> Callable | None:
    rule = _ad.primitive_transposes.get(prim)
    if rule is None:
        rule = getattr(_ad, "fancy_transposes", {}).get(prim)
    return rule


def has_impl(prim: Any) -> bool:
    return "impl" in vars(prim)


def has_abstract_eval(prim: Any) -> bool:
    return "abstract_eval" in vars(prim)


def impl(prim: Any) -> Callable | None:
    return vars(prim).get("impl")


def abstract_eval_rule(prim: Any) -> Callable | None:
    """The user's abstract-eval function (JAX stores a partial around it)."""
    rule = vars(prim).get("abstract_eval")
    if isinstance(rule, functools.partial):
        for arg in rule.args:
            if callable(arg):
                return arg
    return rule


def has_lowering(prim: Any, platform: str = "cpu") -> bool:
    if prim in getattr(_mlir, "_lowerings", {}):
        return True
    per_platform = getattr(_mlir, "_platform_specific_lowerings", {})
    return prim in per_platform.get(platform, {})


def lowering_rule(prim: Any, platform: str = "cpu") -> Callable | None:
    per_platform = getattr(_mlir, "_platform_specific_lowerings", {})
    rule = per_platform.get(platform, {}).get(prim) or getattr(_mlir, "_lowerings", {}).get(prim)
    if rule is None:
        return None
    return _closure_vars(rule).get("fun") or rule


def registered_rules(prim: Any) -> dict[str, Callable | None]:
    """Every rule jaxdiag knows how to read for `prim`, by role."""
    return {
        "impl": impl(prim),
        "abstract_eval": abstract_eval_rule(prim),
        "batching": batching_rule(prim),
        "jvp": jvp_rule(prim),
        "transpose": transpose_rule(prim),
        "lowering": lowering_rule(prim),
    }


def _module_of(fn: Any) -> str:
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = inspect.unwrap(fn) if callable(fn) else fn
    return getattr(fn, "__module__", "") or ""


def is_builtin_primitive(prim: Any) -> bool:
    """JAX's own primitives are trusted unless asked: their rules live in jax/jaxlib modules."""
    rules = [r for r in registered_rules(prim).values() if r is not None]
    if not rules:
        return True
    return all(_module_of(r).split(".")[0] in ("jax", "jaxlib") for r in rules)


# ---------------------------------------------------------------------------------------------------------------
# custom_vjp / custom_jvp / custom_vmap objects
# ---------------------------------------------------------------------------------------------------------------


def is_custom_vjp(obj: Any) -> bool:
    return isinstance(obj, custom_vjp_type)


def is_custom_jvp(obj: Any) -> bool:
    return isinstance(obj, custom_jvp_type)


def is_custom_vmap(obj: Any) -> bool:
    return custom_vmap_type is not None and isinstance(obj, custom_vmap_type)


def custom_vjp_parts(obj: Any) -> tuple[Callable, Callable | None, Callable | None, tuple[int, ...], bool]:
    """(fun, fwd, bwd, nondiff_argnums, symbolic_zeros) of a custom_vjp."""
    return (obj.fun, obj.fwd, obj.bwd, tuple(obj.nondiff_argnums), bool(getattr(obj, "symbolic_zeros", False)))


def custom_jvp_parts(obj: Any) -> tuple[Callable, Callable | None, tuple[int, ...], bool]:
    """(fun, jvp rule, nondiff_argnums, symbolic_zeros) of a custom_jvp."""
    return (obj.fun, obj.jvp, tuple(obj.nondiff_argnums), bool(getattr(obj, "symbolic_zeros", False)))


def custom_vmap_parts(obj: Any) -> tuple[Callable, Callable | None]:
    return obj.fun, obj.vmap_rule


@contextlib.contextmanager
def record_custom_calls(seen: list) -> Iterator[None]:
    """Record every custom_vjp / custom_jvp / custom_vmap object called while the body runs.

    Appends (obj, args) for each call. The classes' `__call__` are restored on exit, even on error.
    """
    classes = [c for c in (custom_vjp_type, custom_jvp_type, custom_vmap_type) if c is not None]
    originals = {cls: cls.__dict__["__call__"] for cls in classes if "__call__" in cls.__dict__}

    def make(original):
        @functools.wraps(original)
        def recording_call(self, *args, **kwargs):
            seen.append((self, args, kwargs))
            return original(self, *args, **kwargs)

        return recording_call

    try:
        for cls, original in originals.items():
            cls.__call__ = make(original)
        yield
    finally:
        for cls, original in originals.items():
            cls.__call__ = original


# ---------------------------------------------------------------------------------------------------------------
# Jaxprs
# ---------------------------------------------------------------------------------------------------------------


def sub_jaxprs(eqn: Any) -> Iterator[Any]:
    """The jaxprs nested in an equation's params (jit, scan, cond branches, custom_jvp_call, ...)."""
    for value in eqn.params.values():
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            if isinstance(item, _core.ClosedJaxpr):
                yield item.jaxpr
            elif isinstance(item, _core.Jaxpr):
                yield item


def iter_eqns(jaxpr: Any) -> Iterator[Any]:
    """Every equation in `jaxpr` and, depth first, in the jaxprs nested inside it."""
    if isinstance(jaxpr, _core.ClosedJaxpr):
        jaxpr = jaxpr.jaxpr
    for eqn in jaxpr.eqns:
        yield eqn
        for sub in sub_jaxprs(eqn):
            yield from iter_eqns(sub)


def eqn_source_line(eqn: Any) -> tuple[str, int] | None:
    """The user's (file, line) that created `eqn`, from JAX's source info, if recorded."""
    try:
        from jax._src import source_info_util

        frame = source_info_util.user_frame(eqn.source_info)
    except Exception:
        return None
    if frame is None:
        return None
    return frame.file_name, frame.start_line


def aval_of(var: Any) -> Any:
    return var.aval


def axis_size_of(vals: tuple, dims: tuple) -> int | None:
    """The vmap axis size seen by a batching rule, read off the first batched operand."""
    for v, d in zip(vals, dims):
        if d is not None and isinstance(d, int) and 0 <= d < np.ndim(v):
            return int(np.shape(v)[d])
    return None


@contextlib.contextmanager
def jax_config(**flags: Any) -> Iterator[None]:
    """Set JAX config flags for the body and restore them afterwards."""
    old = {name: getattr(jax.config, name) for name in flags}
    try:
        for name, value in flags.items():
            jax.config.update(name, value)
        yield
    finally:
        for name, value in old.items():
            jax.config.update(name, value)


def x64_enabled() -> bool:
    return bool(jax.config.jax_enable_x64)


def tangent_dtype(dtype: Any) -> Any:
    """The tangent dtype JAX uses for a primal dtype (float0 for integers and bools)."""
    dtype = np.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.inexact):
        return dtype
    return float0


def snapshot_registries() -> dict[str, Any]:
    """A copy of every registry jaxdiag may touch, to verify that it leaves JAX as it found it."""
    return {
        "batching": dict(_batching_table()),
        "legacy_batching": dict(_legacy_batching_table()),
        "jvp": dict(_ad.primitive_jvps),
        "transpose": dict(_ad.primitive_transposes),
        "lowerings": dict(getattr(_mlir, "_lowerings", {})),
        "custom_calls": {
            c: c.__dict__.get("__call__") for c in (custom_vjp_type, custom_jvp_type, custom_vmap_type) if c
        },
        "x64": x64_enabled(),
        "enable_checks": bool(jax.config.jax_enable_checks),
    }


__all__ = [name for name in dir() if not name.startswith("__")] + ["ad", "batching", "mlir", "Primitive"]
