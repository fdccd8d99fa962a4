"""JXR009 good: the rule takes the bind parameter as a keyword and shifts the axis past the batch axis it put in
front."""

import jax.numpy as jnp
from jax import lax
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"cummax_p": {"args": ["f32[4,3]"], "params": {"axis": 0}}}

cummax_p = Primitive("cummax")


def _cummax_impl(x, *, axis):
    return lax.cummax(x, axis=axis)


def _cummax_abstract_eval(x, *, axis):
    return ShapedArray(x.shape, x.dtype)


def _cummax_batching(batched_args, batch_dims, *, axis):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    return cummax_p.bind(x, axis=axis + 1), 0


cummax_p.def_impl(_cummax_impl)
cummax_p.def_abstract_eval(_cummax_abstract_eval)
batching.primitive_batchers[cummax_p] = _cummax_batching
mlir.register_lowering(cummax_p, mlir.lower_fun(_cummax_impl, multiple_results=False))
