"""JXV002 good: the total depends on x, so it is batched exactly when x is."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap

JAXDIAG = {"total": {"args": ["f32[3]"]}}


@custom_vmap
def total(x):
    return jnp.sum(x)


@total.def_vmap
def total_vmap(axis_size, in_batched, x):
    (x_batched,) = in_batched
    return jnp.sum(x, axis=-1), x_batched
