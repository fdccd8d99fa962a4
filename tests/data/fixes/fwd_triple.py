"""A custom_vjp whose fwd returns its residuals flat beside the primal output (three entries instead of the pair
(primal, residuals)); JAX fails with `Custom VJP fwd rule ... must produce a pair`."""

import jax
import jax.numpy as jnp

JAXDIAG = {"scaled_tanh": {"args": ["f32[3]"]}}


@jax.custom_vjp
def scaled_tanh(x):
    return 2.0 * jnp.tanh(x)


def scaled_tanh_fwd(x):  # jaxdiag-expect: JXG012
    y = jnp.tanh(x)
    return 2.0 * y, y, x


def scaled_tanh_bwd(res, g):
    y, x = res
    return (2.0 * g * (1.0 - y * y),)


scaled_tanh.defvjp(scaled_tanh_fwd, scaled_tanh_bwd)
