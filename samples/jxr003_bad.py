"""JXR003 bad: the abstract eval says a row sum keeps the input's shape, but the impl drops the last axis. Eager
calls silently return the impl's (correct) result; under jit lowering fails with an MLIR verifier error,
`type of return operand 0 ('tensor<4xf32>') doesn't match function result type ('tensor<4x3xf32>')`.
"""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"row_sum_p": {"args": ["f32[4,3]"]}}

row_sum_p = Primitive("row_sum")


def _row_sum_impl(x):
    return jnp.sum(x, axis=-1)


def _row_sum_abstract_eval(x):  # jaxdiag-expect: JXR003
    return ShapedArray(x.shape, x.dtype)  # the summed axis is still there


def _row_sum_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    return row_sum_p.bind(x), 0


row_sum_p.def_impl(_row_sum_impl)
row_sum_p.def_abstract_eval(_row_sum_abstract_eval)
batching.primitive_batchers[row_sum_p] = _row_sum_batching
mlir.register_lowering(row_sum_p, mlir.lower_fun(_row_sum_impl, multiple_results=False))
