"""JXV003 bad: the rule builds the batched outer products with the batch axis last (`ijb`). JAX always reads
axis 0 as the batch axis of an output declared batched, so vmap returns a garbled (5, 3, 4) array, silently.
"""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap

JAXDIAG = {"outer": {"args": ["f32[3]", "f32[4]"]}}


@custom_vmap
def outer(x, y):
    return jnp.outer(x, y)


@outer.def_vmap
def outer_vmap(axis_size, in_batched, x, y):  # jaxdiag-expect: JXV003
    x_batched, y_batched = in_batched
    x = x if x_batched else jnp.broadcast_to(x, (axis_size, *x.shape))
    y = y if y_batched else jnp.broadcast_to(y, (axis_size, *y.shape))
    return jnp.einsum("bi,bj->ijb", x, y), True  # batch axis last
