"""JXV001 good: one array out, one bool in `out_batched`. The norm is batched exactly when x is."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap

JAXDIAG = {"row_norm": {"args": ["f32[3]"]}}


@custom_vmap
def row_norm(x):
    return jnp.sqrt(jnp.sum(x * x))


@row_norm.def_vmap
def row_norm_vmap(axis_size, in_batched, x):
    (x_batched,) = in_batched
    return jnp.sqrt(jnp.sum(x * x, axis=-1)), x_batched
