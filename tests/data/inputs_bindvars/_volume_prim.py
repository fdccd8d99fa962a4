"""A spreading primitive onto a 3-D grid: `grid` (a tuple of three ints, which its public wrapper annotates and its
JVP rule rebuilds as `(n1, n2, n3)`) sets the output shape. No call passes a value, and a grid of any other length
is refused (`n1, n2, n3 = grid`): the synthesised tuples have the three entries its code always gives."""

import math

import numpy as np
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_volume_p = Primitive("bindvars_volume")


def _basis(n, size):
    return np.cos(2 * np.pi * np.outer(np.arange(n), np.arange(size)) / max(size, 1)).astype(np.float32)


def _impl(x, *, grid):
    n1, n2, n3 = grid
    return (x @ _basis(x.shape[-1], n1 * n2 * n3)).reshape(x.shape[:-1] + (n1, n2, n3))


def _abstract_eval(x, *, grid):
    n1, n2, n3 = grid
    return ShapedArray(x.shape[:-1] + (n1, n2, n3), x.dtype)


def _jvp(primals, tangents, *, grid):
    (x,), (t,) = primals, tangents
    n1, n2, n3 = grid
    return _volume_p.bind(x, grid=(n1, n2, n3)), _volume_p.bind(t, grid=(n1, n2, n3))


def _transpose(ct, x, *, grid):
    flat = ct.reshape(ct.shape[:-3] + (-1,))
    return [flat @ _basis(x.aval.shape[-1], math.prod(grid)).T]


def _batching(batched_args, batch_dims, *, grid):
    (x,), (d,) = batched_args, batch_dims
    return _volume_p.bind(jnp.moveaxis(x, d, 0), grid=grid), 0


_volume_p.def_impl(_impl)
_volume_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(_volume_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[_volume_p] = _jvp
ad.primitive_transposes[_volume_p] = _transpose
batching.primitive_batchers[_volume_p] = _batching


def spread_volume(x, grid: tuple[int, int, int]):
    return _volume_p.bind(x, grid=tuple(grid))
