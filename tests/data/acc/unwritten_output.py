"""A kernel that writes the first half of its output buffer and leaves the rest as it found it (scratch memory: here
drawn afresh on each eager call). Its lowering and its batching rule compute the written half the same way and zeros
elsewhere; the unwritten half is no function of the input, so neither jit nor vmap can be compared with the eager
impl there: the comparisons are not judged, and say why."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import ShapedArray
from jax.extend import core
from jax.interpreters import batching, mlir

fill_p = core.Primitive("fill")


def _written(x):
    return jnp.concatenate([2.0 * x, jnp.zeros_like(x)])


def _impl(x):
    scratch = np.random.default_rng().standard_normal(np.shape(x)).astype(np.float32)  # what the buffer held
    return jnp.concatenate([2.0 * jnp.asarray(x), jnp.asarray(scratch)])


def _abstract(x):
    return ShapedArray((2 * x.shape[0],), x.dtype)


def _batch(args, dims):
    (x,), (d,) = args, dims
    return jax.vmap(_written)(jnp.moveaxis(x, d, 0)), 0


fill_p.def_impl(_impl)
fill_p.def_abstract_eval(_abstract)
mlir.register_lowering(fill_p, mlir.lower_fun(_written, multiple_results=False))
batching.primitive_batchers[fill_p] = _batch
