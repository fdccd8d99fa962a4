"""A spreading primitive whose `output_shape` (a tuple of ints) sets its output shape: values (..., n) -> a grid
(..., *output_shape). Its public wrapper passes its own `output_shape` parameter to the bind; the package's own
caller (`spectra.periodogram`) passes the wrapper a literal."""

import math

import numpy as np
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_spread_p = Primitive("bindvars_spread")


def _basis(n, size):
    return np.cos(2 * np.pi * np.outer(np.arange(n), np.arange(size)) / max(size, 1)).astype(np.float32)


def _impl(x, *, output_shape):
    size = math.prod(output_shape)
    out = x @ _basis(x.shape[-1], size)
    return out.reshape(x.shape[:-1] + tuple(output_shape))


def _abstract_eval(x, *, output_shape):
    return ShapedArray(x.shape[:-1] + tuple(output_shape), x.dtype)


def _jvp(primals, tangents, *, output_shape):
    (x,), (t,) = primals, tangents
    return _spread_p.bind(x, output_shape=output_shape), _spread_p.bind(t, output_shape=output_shape)


def _transpose(ct, x, *, output_shape):
    n = x.aval.shape[-1]
    flat = ct.reshape(ct.shape[:ct.ndim - len(output_shape)] + (-1,))
    return [flat @ _basis(n, flat.shape[-1]).T]


def _batching(batched_args, batch_dims, *, output_shape):
    (x,), (d,) = batched_args, batch_dims
    return _spread_p.bind(jnp.moveaxis(x, d, 0), output_shape=output_shape), 0


_spread_p.def_impl(_impl)
_spread_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(_spread_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[_spread_p] = _jvp
ad.primitive_transposes[_spread_p] = _transpose
batching.primitive_batchers[_spread_p] = _batching


def spread(x, output_shape):
    return _spread_p.bind(x, output_shape=output_shape)
