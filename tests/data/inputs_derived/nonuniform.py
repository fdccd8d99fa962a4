"""Non-uniform Fourier transforms: complex values at real points. `type1_p` spreads (batch, channels, points) values
onto `output_shape` modes, a bind param its public `transform1(output_shape, values, points)` takes as a static
argument (`static_argnums=(0,)`) that no call of the package passes; `type2_p` interpolates (batch, channels, modes)
at (batch, points). Both abstract evals accept complex values at real points of the same batch and point counts
only."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


def _modes(count, dtype):
    return jnp.arange(count, dtype=dtype) - count // 2


def _spread(values, points, *, output_shape):
    _check(values, points)
    (count,) = output_shape
    phase = jnp.exp(1j * _modes(count, points.dtype)[None, :, None] * points[:, None, :])  # (batch, modes, points)
    return jnp.einsum("bcp,bkp->bck", values, phase).astype(values.dtype)


def _interpolate(values, points):
    _check(values, points)
    count = values.shape[-1]
    phase = jnp.exp(-1j * _modes(count, points.dtype)[None, :, None] * points[:, None, :])
    return jnp.einsum("bck,bkp->bcp", values, phase).astype(values.dtype)


def _check(values, points):
    assert np.issubdtype(values.dtype, np.complexfloating) and np.issubdtype(points.dtype, np.floating)
    assert values.ndim == 3 and points.ndim == 2 and values.shape[0] == points.shape[0]


def _type1_abstract(values, points, *, output_shape):
    _check(values, points)
    assert values.shape[2] == points.shape[1]
    return ShapedArray(values.shape[:2] + tuple(output_shape), values.dtype)


def _type2_abstract(values, points):
    _check(values, points)
    return ShapedArray(values.shape[:2] + (points.shape[1],), values.dtype)


def _jvp_of(compute):
    def jvp(primals, tangents, **params):
        tangents = [jnp.zeros_like(p) if type(t) is ad.Zero else t for p, t in zip(primals, tangents)]
        return jax.jvp(functools.partial(compute, **params), tuple(primals), tuple(tangents))
    return jvp


def _batching_of(compute):
    def batch(args, dims, **params):
        axes = tuple(d if isinstance(d, int) else None for d in dims)
        size = next(a.shape[d] for a, d in zip(args, dims) if isinstance(d, int))
        moved = [jnp.moveaxis(a, d, 0) if isinstance(d, int) else jnp.broadcast_to(a, (size,) + a.shape)
                 for a, d in zip(args, axes)]
        flat = [m.reshape((-1,) + m.shape[2:]) for m in moved]
        out = compute(*flat, **params)
        return out.reshape((size, -1) + out.shape[1:]), 0
    return batch


type1_p = Primitive("derived_type1")
type1_p.def_impl(_spread)
type1_p.def_abstract_eval(_type1_abstract)
mlir.register_lowering(type1_p, mlir.lower_fun(_spread, multiple_results=False))
ad.primitive_jvps[type1_p] = _jvp_of(_spread)
batching.primitive_batchers[type1_p] = _batching_of(_spread)

type2_p = Primitive("derived_type2")
type2_p.def_impl(_interpolate)
type2_p.def_abstract_eval(_type2_abstract)
mlir.register_lowering(type2_p, mlir.lower_fun(_interpolate, multiple_results=False))
ad.primitive_jvps[type2_p] = _jvp_of(_interpolate)
batching.primitive_batchers[type2_p] = _batching_of(_interpolate)


@functools.partial(jax.jit, static_argnums=(0,))
def transform1(output_shape, values, points, *, eps=1e-6):
    """`values` (points,) at `points` (points,) onto `output_shape` modes."""
    out = type1_p.bind(values[None, None], points[None], output_shape=tuple(output_shape))
    return out[0, 0]


@jax.jit
def transform2(values, points, *, eps=1e-6):
    """Modes `values` (modes,) at `points` (points,)."""
    return type2_p.bind(values[None, None], points[None])[0, 0]
