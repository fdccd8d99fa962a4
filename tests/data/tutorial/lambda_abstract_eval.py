"""Tutorial-style: the abstract evaluation is a lambda, and it drops an axis the impl keeps."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"rowmax_p": {"args": ["f32[4,3]"]}}

rowmax_p = Primitive("rowmax")


def _rowmax_impl(x):
    return jnp.max(x, axis=-1, keepdims=True)


rowmax_p.def_impl(_rowmax_impl)
rowmax_p.def_abstract_eval(lambda x: ShapedArray(x.shape[:-1], x.dtype))  # jaxdiag-expect: JXR003


def _rowmax_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    return rowmax_p.bind(jnp.moveaxis(x, bx, 0)), 0


batching.primitive_batchers[rowmax_p] = _rowmax_batching
mlir.register_lowering(rowmax_p, mlir.lower_fun(_rowmax_impl, multiple_results=False))
