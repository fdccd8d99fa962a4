"""JXG014 good: the derivative of softplus is sigmoid(x)."""

import jax
import jax.numpy as jnp

JAXDIAG = {"softplus": {"args": ["f32[3]"]}}


@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


def softplus_fwd(x):
    return jnp.logaddexp(x, 0.0), x


def softplus_bwd(x, g):
    return (g * jax.nn.sigmoid(x),)


softplus.defvjp(softplus_fwd, softplus_bwd)
