"""JXG017 bad: fwd saves one residual but bwd unpacks two. JAX reports the ValueError from deep inside its
backward pass; jaxdiag names bwd and its line."""

import jax
import jax.numpy as jnp

JAXDIAG = {"scaled_tanh": {"args": ["f32[3]"]}}


@jax.custom_vjp
def scaled_tanh(x):
    return 2.0 * jnp.tanh(x)


def scaled_tanh_fwd(x):
    t = jnp.tanh(x)
    return 2.0 * t, (t,)


def scaled_tanh_bwd(res, g):  # jaxdiag-expect: JXG017
    t, x = res
    return (2.0 * g * (1.0 - t * t),)


scaled_tanh.defvjp(scaled_tanh_fwd, scaled_tanh_bwd)
