"""A library primitive whose batching rule returns the input's batch dim for a result that has lost every other
axis: right for in_axes=0 only."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

norm_p = Primitive("minilib_norm")


def _norm_impl(x):
    return jnp.sqrt(jnp.sum(x * x))


def _norm_abstract_eval(x):
    return ShapedArray((), x.dtype)


def _norm_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    axes = tuple(i for i in range(x.ndim) if i != bx)
    return jnp.sqrt(jnp.sum(x * x, axis=axes)), bx  # the bug: the result's batch axis is 0


norm_p.def_impl(_norm_impl)
norm_p.def_abstract_eval(_norm_abstract_eval)
batching.primitive_batchers[norm_p] = _norm_batching
mlir.register_lowering(norm_p, mlir.lower_fun(_norm_impl, multiple_results=False))


def scaled_norm(x):
    return 2.0 * norm_p.bind(x)
