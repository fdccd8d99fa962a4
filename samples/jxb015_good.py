"""JXB015 good: the batching rule keeps the dtype the impl computes in, so f64 inputs under x64 batch to float64
and f32 inputs to float32."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"rowsum_p": {"args": ["f64[3]"]}}

rowsum_p = Primitive("rowsum")


def _rowsum_impl(x):
    return jnp.sum(x)


def _rowsum_abstract_eval(x):
    return ShapedArray((), x.dtype)


def _rowsum_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    out = jnp.sum(x, axis=tuple(a for a in range(x.ndim) if a != bx))
    return out, 0


rowsum_p.def_impl(_rowsum_impl)
rowsum_p.def_abstract_eval(_rowsum_abstract_eval)
batching.primitive_batchers[rowsum_p] = _rowsum_batching
mlir.register_lowering(rowsum_p, mlir.lower_fun(_rowsum_impl, multiple_results=False))
