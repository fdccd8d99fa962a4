"""JXG016 good: the same gradient clipping written with jax.numpy works under jit and vmap. The clipped
gradient differs from the identity's derivative on purpose, so JXG014 is suppressed on the bwd's def line."""

import jax
import jax.numpy as jnp

JAXDIAG = {"clipped_identity": {"args": ["f32[3]"]}}


@jax.custom_vjp
def clipped_identity(x):
    return x


def clipped_identity_fwd(x):
    return x, None


def clipped_identity_bwd(res, g):  # jaxdiag: ignore[JXG014]
    return (jnp.clip(g, -0.1, 0.1),)


clipped_identity.defvjp(clipped_identity_fwd, clipped_identity_bwd)
