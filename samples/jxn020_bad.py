"""JXN020 bad: `segment_total_p(data, segment_ids)`'s batching rule batches `data` but refuses a batched
`segment_ids` with its own `raise` (one segmentation shared by the whole batch). That is the rule's contract, not a
defect: jaxdiag compares every batch dims combination the rule accepts with the per-example loop, and a note names
the refused ones. `jax.vmap` over `segment_ids` fails with the rule's own message."""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"segment_total_p": {"args": ["f32[6]", "i32[6]@0..2"]}}

SEGMENTS = 3
segment_total_p = Primitive("segment_total")


def _segment_total_impl(data, segment_ids):
    return jax.ops.segment_sum(data, segment_ids, num_segments=SEGMENTS)


def _segment_total_abstract_eval(data, segment_ids):
    return ShapedArray((SEGMENTS,), data.dtype)


def _segment_total_batching(batched_args, batch_dims):
    (data, segment_ids), (bd, bs) = batched_args, batch_dims
    if bs is not None:
        raise ValueError("segment_ids cannot be batched: one segmentation is shared by the batch")
    data = jnp.moveaxis(data, bd, -1)  # segment_sum sums along the leading axis: the batch goes last, then first
    return jnp.moveaxis(jax.ops.segment_sum(data, segment_ids, num_segments=SEGMENTS), -1, 0), 0


segment_total_p.def_impl(_segment_total_impl)
segment_total_p.def_abstract_eval(_segment_total_abstract_eval)
mlir.register_lowering(segment_total_p, mlir.lower_fun(_segment_total_impl, multiple_results=False))
batching.primitive_batchers[segment_total_p] = _segment_total_batching
