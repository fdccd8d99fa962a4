"""JXV004 good: with a shared matrix, each row of the batch is multiplied by m.T (m @ x per example)."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap

JAXDIAG = {"apply": {"args": ["f32[3,3]", "f32[3]"]}}


@custom_vmap
def apply(m, x):
    return m @ x


@apply.def_vmap
def apply_vmap(axis_size, in_batched, m, x):
    m_batched, x_batched = in_batched
    x = x if x_batched else jnp.broadcast_to(x, (axis_size, *x.shape))
    if not m_batched:
        return x @ m.T, True
    return jnp.einsum("bij,bj->bi", m, x), True
