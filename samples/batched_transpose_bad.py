"""A cumulative-sum primitive whose transpose flips axis 0. Per example (1-D) that is the data axis, so jax.grad,
jax.vmap(jax.grad(f)) and the dot-product test are all right; but jax.vjp(jax.vmap(f)) transposes the batched
primitive, bound by the batching rule on (batch, n) operands, and there axis 0 is the batch axis: each example gets
another example's gradient (JXG016, located at the transpose rule)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"cumsum_p": {"args": ["f32[4]"]}}

cumsum_p = Primitive("cumsum_flip0")


def _cumsum_impl(x):
    return jnp.cumsum(x, axis=-1)


def _cumsum_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _cumsum_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    return cumsum_p.bind(jnp.moveaxis(x, bx, 0)), 0  # the cumsum runs over the last axis, never the batch


def _cumsum_transpose(ct, x):  # jaxdiag-expect: JXG016
    return [jnp.flip(cumsum_p.bind(jnp.flip(ct, 0)), 0)]


cumsum_p.def_impl(_cumsum_impl)
cumsum_p.def_abstract_eval(_cumsum_abstract_eval)
mlir.register_lowering(cumsum_p, mlir.lower_fun(_cumsum_impl, multiple_results=False))
batching.primitive_batchers[cumsum_p] = _cumsum_batching
ad.deflinear2(cumsum_p, _cumsum_transpose)
