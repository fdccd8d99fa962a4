"""JXG021 good: the rule returns exactly f's value as its primal output."""

import jax
import jax.numpy as jnp

JAXDIAG = {"soft_clip": {"args": ["f32[3]"]}}

SCALE = 3.0


@jax.custom_jvp
def soft_clip(x):
    return SCALE * jnp.tanh(x / SCALE)


@soft_clip.defjvp
def soft_clip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = jnp.tanh(x / SCALE)
    return SCALE * y, (1.0 - y * y) * t
