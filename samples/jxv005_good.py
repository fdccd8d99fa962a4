"""JXV005 good: unbatched arguments are broadcast to the batch before the batched computation."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap

JAXDIAG = {"dot": {"args": ["f32[3]", "f32[3]"]}}


@custom_vmap
def dot(x, y):
    return jnp.dot(x, y)


@dot.def_vmap
def dot_vmap(axis_size, in_batched, x, y):
    x_batched, y_batched = in_batched
    x = x if x_batched else jnp.broadcast_to(x, (axis_size, *x.shape))
    y = y if y_batched else jnp.broadcast_to(y, (axis_size, *y.shape))
    return jnp.einsum("bj,bj->b", x, y), True
