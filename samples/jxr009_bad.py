"""JXR009 bad: JAX passes a primitive's bind parameters to every rule as keyword arguments; this batching rule has
no parameter for `axis`, so vmap fails with `TypeError: _cummax_batching() got an unexpected keyword argument
'axis'`, naming only the rule (jax-finufft#7)."""

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


def _cummax_batching(batched_args, batch_dims):  # jaxdiag-expect: JXR009
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    return cummax_p.bind(x, axis=1), 0


cummax_p.def_impl(_cummax_impl)
cummax_p.def_abstract_eval(_cummax_abstract_eval)
batching.primitive_batchers[cummax_p] = _cummax_batching
mlir.register_lowering(cummax_p, mlir.lower_fun(_cummax_impl, multiple_results=False))
