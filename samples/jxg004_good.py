"""JXG004 good: the cotangent keeps the input's dtype."""

import jax
import jax.numpy as jnp

JAXDIAG = {"fast_tanh": {"args": ["f32[3]"]}}


@jax.custom_vjp
def fast_tanh(x):
    return jnp.tanh(x)


def fast_tanh_fwd(x):
    y = jnp.tanh(x)
    return y, y


def fast_tanh_bwd(y, g):
    return (g * (1.0 - y * y),)


fast_tanh.defvjp(fast_tanh_fwd, fast_tanh_bwd)
