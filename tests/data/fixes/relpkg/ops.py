"""A custom_vmap rule in a package module that imports its helper relatively; the helper builds the batch axis last."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap

from .helpers import outer_batched

JAXDIAG = {"outer": {"args": ["f32[3]", "f32[4]"]}}


@custom_vmap
def outer(x, y):
    return jnp.outer(x, y)


@outer.def_vmap
def outer_vmap(axis_size, in_batched, x, y):  # jaxdiag-expect: JXV003
    x_batched, y_batched = in_batched
    x = x if x_batched else jnp.broadcast_to(x, (axis_size, *x.shape))
    y = y if y_batched else jnp.broadcast_to(y, (axis_size, *y.shape))
    return outer_batched(x, y), True
