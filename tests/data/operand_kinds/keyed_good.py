"""keyed.py with the bwd fixed."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def noisy_relu(x, key):
    return jnp.maximum(x, 0.0) + 0.01 * jax.random.normal(key, x.shape)


def noisy_relu_fwd(x, key):
    return noisy_relu(x, key), x


def noisy_relu_bwd(x, g):
    return g * (x > 0), None


noisy_relu.defvjp(noisy_relu_fwd, noisy_relu_bwd)
