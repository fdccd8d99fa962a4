"""JXG015 good: the mask is a regular argument; bwd returns None for it (no gradient), which works under jit."""

import jax
import jax.numpy as jnp

JAXDIAG = {"masked_scale": {"args": ["f32[4]", "f32[4]"]}}


@jax.custom_vjp
def masked_scale(x, mask):
    return 3.0 * x * jax.lax.stop_gradient(mask)


def masked_scale_fwd(x, mask):
    return 3.0 * x * mask, mask


def masked_scale_bwd(mask, g):
    return (3.0 * g * mask, None)


masked_scale.defvjp(masked_scale_fwd, masked_scale_bwd)
