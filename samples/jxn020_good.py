"""JXN020 good: the `segment_total_p` of `jxn020_bad.py` with a rule that batches `segment_ids` too (each example's
segmentation offset into a segment range of its own), so there is nothing to refuse and no note."""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"segment_total_p": {"args": ["f32[6]", "i32[6]@0..2"]}}

SEGMENTS = 3
segment_total_p = Primitive("segment_total_ok")


def _segment_total_impl(data, segment_ids):
    return jax.ops.segment_sum(data, segment_ids, num_segments=SEGMENTS)


def _segment_total_abstract_eval(data, segment_ids):
    return ShapedArray((SEGMENTS,), data.dtype)


def _segment_total_batching(batched_args, batch_dims):
    (data, segment_ids), (bd, bs) = batched_args, batch_dims
    size = data.shape[bd] if bd is not None else segment_ids.shape[bs]
    data = jnp.broadcast_to(data, (size, *data.shape)) if bd is None else jnp.moveaxis(data, bd, 0)
    segment_ids = (jnp.broadcast_to(segment_ids, (size, *segment_ids.shape)) if bs is None
                   else jnp.moveaxis(segment_ids, bs, 0))
    offsets = SEGMENTS * jnp.arange(size, dtype=segment_ids.dtype)[:, None]
    sums = jax.ops.segment_sum(data.reshape(-1), (segment_ids + offsets).reshape(-1), num_segments=size * SEGMENTS)
    return sums.reshape(size, SEGMENTS), 0


segment_total_p.def_impl(_segment_total_impl)
segment_total_p.def_abstract_eval(_segment_total_abstract_eval)
mlir.register_lowering(segment_total_p, mlir.lower_fun(_segment_total_impl, multiple_results=False))
batching.primitive_batchers[segment_total_p] = _segment_total_batching
