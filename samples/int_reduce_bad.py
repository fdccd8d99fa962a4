"""A primitive that takes the maximum of an integer vector, with a batching rule that reduces over every axis,
the batch axis included, and broadcasts the result. When the batch examples are permutations of one example they
all share one maximum and the bug hides; with examples that differ in their maxima, vmap differs from the
per-example loop (JXB005)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"imax_p": {"args": ["i32[4]"]}}

imax_p = Primitive("imax_wrong_dim")


def _imax_impl(x):
    return jnp.max(x, axis=-1)


def _imax_abstract_eval(x):
    return ShapedArray(x.shape[:-1], x.dtype)


def _imax_batching(batched_args, batch_dims):  # jaxdiag-expect: JXB005
    (x,), (bx,) = batched_args, batch_dims
    size = x.shape[bx]
    return jnp.broadcast_to(jnp.max(x), (size,)), 0  # reduces the batch axis too


imax_p.def_impl(_imax_impl)
imax_p.def_abstract_eval(_imax_abstract_eval)
mlir.register_lowering(imax_p, mlir.lower_fun(_imax_impl, multiple_results=False))
batching.primitive_batchers[imax_p] = _imax_batching
