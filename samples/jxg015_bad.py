"""JXG015 bad: an array (the mask) is declared in nondiff_argnums. Eager jax.grad works, but as soon as the mask
is traced (jit, scan) JAX raises UnexpectedTracerError."""

from functools import partial

import jax
import jax.numpy as jnp

JAXDIAG = {"masked_scale": {"args": ["f32[4]", "f32[4]"]}}


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def masked_scale(x, mask):  # jaxdiag-expect: JXG015
    return 3.0 * x * mask


def masked_scale_fwd(x, mask):
    return 3.0 * x * mask, None


def masked_scale_bwd(mask, res, g):
    return (3.0 * g * mask,)


masked_scale.defvjp(masked_scale_fwd, masked_scale_bwd)
