"""A custom_vmap that only another's vmap rule calls: `_scale` is one example, its rule hands the whole batch to
`_rows_scaled` (one call for a batch, as a native batched kernel is called), whose own rule merges a batch of batches
into one batch axis and calls itself again. Neither takes float repeat counts: inference cannot draw them.
`_rows_scaled_wrong` merges the axes in the wrong order (outer and inner swapped): its values are garbled."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap


def _counts(k):
    if not jnp.issubdtype(k.dtype, jnp.integer):
        raise TypeError(f"k holds integer repeat counts, got {k.dtype}")


@custom_vmap
def _rows_scaled(x, k):  # a batch of rows: x and k (B, n)
    _counts(k)
    return x * k


@_rows_scaled.def_vmap
def _rows_scaled_vmap(axis_size, in_batched, x, k):
    x_b, k_b = in_batched
    x = x if x_b else jnp.broadcast_to(x, (axis_size, *x.shape))
    k = k if k_b else jnp.broadcast_to(k, (axis_size, *k.shape))
    outer, inner = x.shape[0], x.shape[1]
    out = _rows_scaled(x.reshape((outer * inner, *x.shape[2:])), k.reshape((outer * inner, *k.shape[2:])))
    return out.reshape((outer, inner, *out.shape[1:])), True


@custom_vmap
def _rows_scaled_wrong(x, k):
    _counts(k)
    return x * k


@_rows_scaled_wrong.def_vmap
def _rows_scaled_wrong_vmap(axis_size, in_batched, x, k):
    x_b, k_b = in_batched
    x = x if x_b else jnp.broadcast_to(x, (axis_size, *x.shape))
    k = k if k_b else jnp.broadcast_to(k, (axis_size, *k.shape))
    outer, inner = x.shape[0], x.shape[1]
    x = jnp.swapaxes(x, 0, 1)  # the wrong order: rows of different examples interleaved
    out = _rows_scaled_wrong(x.reshape((outer * inner, *x.shape[2:])), k.reshape((outer * inner, *k.shape[2:])))
    return out.reshape((outer, inner, *out.shape[1:])), True


@custom_vmap
def _scale(x, k):  # one example: x and k (n,)
    _counts(k)
    return x * k


@_scale.def_vmap
def _scale_vmap(axis_size, in_batched, x, k):
    x_b, k_b = in_batched
    x = x if x_b else jnp.broadcast_to(x, (axis_size, *x.shape))
    k = k if k_b else jnp.broadcast_to(k, (axis_size, *k.shape))
    return _rows_scaled(x, k), True


@custom_vmap
def _scale_wrong(x, k):
    _counts(k)
    return x * k


@_scale_wrong.def_vmap
def _scale_wrong_vmap(axis_size, in_batched, x, k):
    x_b, k_b = in_batched
    x = x if x_b else jnp.broadcast_to(x, (axis_size, *x.shape))
    k = k if k_b else jnp.broadcast_to(k, (axis_size, *k.shape))
    return _rows_scaled_wrong(x, k), True


def scale(x, k):
    """`x`: values; `k`: integer repeat counts, one per value."""
    return _scale(jnp.asarray(x, jnp.float32), jnp.asarray(k, jnp.int32))


def scale_wrong(x, k):
    """`x`: values; `k`: integer repeat counts, one per value."""
    return _scale_wrong(jnp.asarray(x, jnp.float32), jnp.asarray(k, jnp.int32))
