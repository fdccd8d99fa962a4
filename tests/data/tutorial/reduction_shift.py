"""Tutorial-style: the rule moves the batch to axis 1, reduces axis 0, and returns the old index 1, but the
reduction shifted the batch axis to 0."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"colsum_p": {"args": ["f32[4,3]"]}}

colsum_p = Primitive("colsum")


def _colsum_impl(x):
    return jnp.sum(x, axis=0)


def _colsum_abstract_eval(x):
    return ShapedArray(x.shape[1:], x.dtype)


def _colsum_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 1)
    out = jnp.sum(x, axis=0)
    return out, 1  # jaxdiag-expect: JXB004 dim 0


colsum_p.def_impl(_colsum_impl)
colsum_p.def_abstract_eval(_colsum_abstract_eval)
batching.primitive_batchers[colsum_p] = _colsum_batching
mlir.register_lowering(colsum_p, mlir.lower_fun(_colsum_impl, multiple_results=False))
