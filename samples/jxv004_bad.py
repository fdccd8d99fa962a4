"""JXV004 bad: the rule's fast path for a shared (unbatched) matrix computes `x @ m`, which is `m.T @ x` per
example. It only runs for `vmap(apply, in_axes=(None, 0))`, so a test with every argument batched passes; the
shared-matrix case is silently wrong."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap

JAXDIAG = {"apply": {"args": ["f32[3,3]", "f32[3]"]}}


@custom_vmap
def apply(m, x):
    return m @ x


@apply.def_vmap
def apply_vmap(axis_size, in_batched, m, x):  # jaxdiag-expect: JXV004
    m_batched, x_batched = in_batched
    x = x if x_batched else jnp.broadcast_to(x, (axis_size, *x.shape))
    if not m_batched:
        return x @ m, True  # one shared matrix: should be x @ m.T
    return jnp.einsum("bij,bj->bi", m, x), True
