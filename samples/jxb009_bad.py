"""JXB009 bad: the rule keeps the reduced axis (`keepdims=True`), so the batched output is (B, 1) where one example
is a scalar. vmap returns a shape the abstract eval never promised; downstream code breaks far away."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"sum_sq_p": {"args": ["f32[3]"]}}

sum_sq_p = Primitive("sum_sq")


def _sum_sq_impl(x):
    return jnp.sum(x * x)


def _sum_sq_abstract_eval(x):
    return ShapedArray((), x.dtype)


def _sum_sq_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    return jnp.sum(x * x, axis=1, keepdims=True), 0  # jaxdiag-expect: JXB009


sum_sq_p.def_impl(_sum_sq_impl)
sum_sq_p.def_abstract_eval(_sum_sq_abstract_eval)
batching.primitive_batchers[sum_sq_p] = _sum_sq_batching
mlir.register_lowering(sum_sq_p, mlir.lower_fun(_sum_sq_impl, multiple_results=False))
