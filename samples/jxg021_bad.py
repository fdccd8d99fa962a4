"""JXG021 bad: the JVP rule's primal forgets the scale that f applies. JAX never compares the two, so under
jax.jvp and jax.grad the function silently returns a different value."""

import jax
import jax.numpy as jnp

JAXDIAG = {"soft_clip": {"args": ["f32[3]"]}}

SCALE = 3.0


@jax.custom_jvp
def soft_clip(x):
    return SCALE * jnp.tanh(x / SCALE)


@soft_clip.defjvp
def soft_clip_jvp(primals, tangents):  # jaxdiag-expect: JXG021
    (x,), (t,) = primals, tangents
    y = jnp.tanh(x / SCALE)
    return y, (1.0 - y * y) * t
