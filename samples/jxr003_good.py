"""JXR003 good: the abstract eval drops the summed axis, exactly as the impl does."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"row_sum_p": {"args": ["f32[4,3]"]}}

row_sum_p = Primitive("row_sum")


def _row_sum_impl(x):
    return jnp.sum(x, axis=-1)


def _row_sum_abstract_eval(x):
    return ShapedArray(x.shape[:-1], x.dtype)


def _row_sum_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    return row_sum_p.bind(x), 0


row_sum_p.def_impl(_row_sum_impl)
row_sum_p.def_abstract_eval(_row_sum_abstract_eval)
batching.primitive_batchers[row_sum_p] = _row_sum_batching
mlir.register_lowering(row_sum_p, mlir.lower_fun(_row_sum_impl, multiple_results=False))
