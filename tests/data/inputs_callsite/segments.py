"""A rule whose second operand is integer segment ids at every call site: it gives them no tangent (float0 in JAX),
and a float draw for them cannot even run (`segment_sum` needs integer ids)."""

import jax
import jax.numpy as jnp

NUM_SEGMENTS = 3


@jax.custom_jvp
def segment_total(data, ids):
    return jax.ops.segment_sum(data, ids, num_segments=NUM_SEGMENTS)


@segment_total.defjvp
def _segment_total_jvp(primals, tangents):
    data, ids = primals
    t_data, _ = tangents
    return segment_total(data, ids), jax.ops.segment_sum(t_data, ids, num_segments=NUM_SEGMENTS)


def pooled(values):
    """The package's caller: ids are built from the data's length, always integers."""
    ids = jnp.arange(values.shape[0], dtype=jnp.int32) % NUM_SEGMENTS
    return segment_total(values, ids)
