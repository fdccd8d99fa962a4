"""A gather primitive `take(x, idx) = x[idx]` with int8 indices, whose batching rule builds the row index of each
batch example with `jnp.arange(size, dtype=idx.dtype)`: an int8 iota. It is exact for a batch of 7 and wraps
around past 127, so a batch of 150 reads rows -128.. (counted from the end) instead of 128..: vmap is silently
wrong for large batches (JXB005, exposed by the batch size beyond the int8 range)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"take_p": {"args": ["f32[6]", "i8[3]@0..5"]}}

take_p = Primitive("take_int8_iota")


def _take_impl(x, idx):
    return x[idx]


def _take_abstract_eval(x, idx):
    return ShapedArray(idx.shape, x.dtype)


def _take_batching(batched_args, batch_dims):  # jaxdiag-expect: JXB005
    (x, idx), (bx, bi) = batched_args, batch_dims
    size = x.shape[bx] if bx is not None else idx.shape[bi]
    x = jnp.broadcast_to(x, (size, *x.shape)) if bx is None else jnp.moveaxis(x, bx, 0)
    idx = jnp.broadcast_to(idx, (size, *idx.shape)) if bi is None else jnp.moveaxis(idx, bi, 0)
    rows = jnp.arange(size, dtype=idx.dtype).astype(jnp.int32)[:, None]  # an int8 iota: wraps around past 127
    return x[rows, idx.astype(jnp.int32)], 0


take_p.def_impl(_take_impl)
take_p.def_abstract_eval(_take_abstract_eval)
mlir.register_lowering(take_p, mlir.lower_fun(_take_impl, multiple_results=False))
batching.primitive_batchers[take_p] = _take_batching
