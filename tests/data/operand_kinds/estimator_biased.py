"""The estimators of estimator.py with their scale wrong: noisy at one key like the correct ones, but biased on
average over keys (a missing `1 / sigma`, one too many)."""

import jax
import jax.numpy as jnp

SIGMA = 0.5


@jax.custom_jvp
def perturbed_max(x, key):
    z = jax.random.normal(key, (64,) + x.shape)
    return jnp.mean(jnp.max(x + SIGMA * z, axis=-1))


@perturbed_max.defjvp
def perturbed_max_jvp(primals, tangents):
    (x, key), (tx, _) = primals, tangents
    z = jax.random.normal(key, (64,) + x.shape)
    values = jnp.max(x + SIGMA * z, axis=-1)
    gradient = jnp.mean(values[:, None] * z, axis=0)  # the `/ SIGMA` is missing
    return perturbed_max(x, key), jnp.dot(gradient, tx)


@jax.custom_vjp
def smoothed_relu(x, key):
    z = jax.random.normal(key, (128,) + x.shape)
    return jnp.mean(jax.nn.relu(x + SIGMA * z), axis=0)


def smoothed_relu_fwd(x, key):
    z = jax.random.normal(key, (128,) + x.shape)
    y = jax.nn.relu(x + SIGMA * z)
    return jnp.mean(y, axis=0), (y, z)


def smoothed_relu_bwd(res, g):
    y, z = res
    return g * jnp.mean(y * z, axis=0) / SIGMA ** 2, None  # one `/ SIGMA` too many


smoothed_relu.defvjp(smoothed_relu_fwd, smoothed_relu_bwd)
