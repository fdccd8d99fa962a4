"""JXB004 bad: the codebook output does not depend on the input, but the rule gives it dim 0, as if it were
batched. Nothing checks that its size at dim 0 is the batch size: vmap silently returns shape (3,) instead of
(B, 3), and the error surfaces later in unrelated code."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"quantize_p": {"args": ["f32[8]"]}}

quantize_p = Primitive("quantize")
quantize_p.multiple_results = True


def _quantize_impl(x):
    codebook = jnp.linspace(-1.0, 1.0, 3, dtype=x.dtype)
    codes = jnp.argmin(jnp.abs(x[..., None] - codebook), axis=-1).astype(jnp.int32)
    return codes, codebook


def _quantize_abstract_eval(x):
    return ShapedArray(x.shape, jnp.int32), ShapedArray((3,), x.dtype)


def _quantize_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    codes, codebook = quantize_p.bind(x)
    return (codes, codebook), (bx, 0)  # jaxdiag-expect: JXB004


quantize_p.def_impl(_quantize_impl)
quantize_p.def_abstract_eval(_quantize_abstract_eval)
batching.primitive_batchers[quantize_p] = _quantize_batching
mlir.register_lowering(quantize_p, mlir.lower_fun(_quantize_impl, multiple_results=True))
