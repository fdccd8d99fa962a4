"""JXB015 bad (an x64-only defect): the batching rule casts to float32. With 32-bit inputs that changes nothing;
with f64 inputs (x64 on) `jax.vmap` returns float32 where each example's impl returns float64. A warning, because
only users who enable x64 see it."""

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
    return out.astype(jnp.float32), 0  # jaxdiag-expect: JXB015


rowsum_p.def_impl(_rowsum_impl)
rowsum_p.def_abstract_eval(_rowsum_abstract_eval)
batching.primitive_batchers[rowsum_p] = _rowsum_batching
mlir.register_lowering(rowsum_p, mlir.lower_fun(_rowsum_impl, multiple_results=False))
