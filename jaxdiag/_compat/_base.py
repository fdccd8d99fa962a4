"""The JAX imports every part of the compatibility layer shares: versions, the private modules, the JAX types
the checks name (`ShapedArray`, `Zero`, `custom_vjp_type`, ...), and the x64 flag (scoped by `_state.x64_scope`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import core as _core
from jax._src import custom_derivatives as _custom_derivatives
from jax._src.interpreters import ad as _ad

from .._core._locate import ABSENT, declared_attribute

try:
    from jax._src import custom_batching as _custom_batching
except ImportError:  # pragma: no cover
    _custom_batching = None  # type: ignore[assignment]

JAX_VERSION: str = jax.__version__
try:
    import jaxlib

    JAXLIB_VERSION: str = getattr(jaxlib, "__version__", None) or jaxlib.version.__version__
except (ImportError, AttributeError):  # pragma: no cover
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
    """A `jax.jit` result: a PjitFunction (C++) or an older Python wrapper with `.lower` (declared attributes only:
    a `__getattr__` of the user's may raise anything, `_locate.declared_attribute`)."""
    return callable(obj) and all(declared_attribute(obj, n, ABSENT) is not ABSENT for n in ("lower", "__wrapped__"))


def _jit_info_in_closures(obj: Any) -> Any:
    """The PjitInfo of a jit function whose PjitFunction has no `_jit_info` (jax 0.5: only the closure of
    `_cache_miss` holds it, two levels down); None when no such cell is found."""
    pending, seen = [getattr(obj, "_cache_miss", None)], 0
    while pending and seen < 8:
        fn = pending.pop()
        seen += 1
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            if hasattr(value, "static_argnums") and hasattr(value, "static_argnames"):
                return value
            if callable(value) and getattr(value, "__closure__", None):
                pending.append(value)
    return None


def x64_enabled() -> bool:
    # flags are read as attributes of `jax.config`, which its type stubs do not declare: looked up by name
    return bool(getattr(jax.config, "jax_enable_x64", False))


def config_values() -> dict[str, Any]:
    """Every JAX config option by name with its value as this thread sees it (a context-local override such as
    `jax.enable_x64(True)` included). `jax.config.values` lists every option; a state option's current value is its
    holder's `value`, which the attribute spelling cannot reach for every option (`jax_dump_ir_to`)."""
    config = jax.config
    values: dict[str, Any] = dict(config.values)
    for name, holder in getattr(config, "_value_holders", {}).items():
        try:
            values[name] = holder.value
        except AttributeError:  # a holder without a value of its own: the global value above stands
            pass
    return values


def device_array(x: Any) -> Any:
    """`jnp.asarray(x)` without a compilation: from jax 0.10 on, `jnp.asarray` of a NumPy array binds
    `lax.stage`, an identity program XLA compiles once per shape and dtype; `jax.device_put` copies the same
    values (same dtype canonicalization, same x64 scope, not weakly typed) without compiling anything."""
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype != float0:
        return jax.device_put(x)
    return jnp.asarray(x)


def tangent_dtype(dtype: Any) -> Any:
    """The tangent dtype JAX uses for a primal dtype (float0 for integers and bools)."""
    dtype = np.dtype(dtype)
    if jnp.issubdtype(dtype, jnp.inexact):
        return dtype
    return float0


def jit_static_args(obj: Any) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(static_argnums, static_argnames) of a `jax.jit` function; empty for anything else."""
    if not is_jit_wrapped(obj):
        return (), ()
    info = getattr(obj, "_jit_info", None) or _jit_info_in_closures(obj)
    if info is None:
        return (), ()
    return tuple(getattr(info, "static_argnums", ()) or ()), tuple(getattr(info, "static_argnames", ()) or ())
