"""Custom derivatives that are Monte-Carlo estimators, each unbiased: at one key the rule differs from the derivative
of the sampled value by construction, averaged over keys it is the derivative of the expected value."""

import jax
import jax.numpy as jnp

SIGMA = 0.5


@jax.custom_jvp
def perturbed_max(x, key):
    z = jax.random.normal(key, (64,) + x.shape)
    return jnp.mean(jnp.max(x + SIGMA * z, axis=-1))


@perturbed_max.defjvp
def perturbed_max_jvp(primals, tangents):  # the score-function estimate E[f(x + sigma z) z] / sigma
    (x, key), (tx, _) = primals, tangents
    z = jax.random.normal(key, (64,) + x.shape)
    values = jnp.max(x + SIGMA * z, axis=-1)
    gradient = jnp.mean(values[:, None] * z, axis=0) / SIGMA
    return perturbed_max(x, key), jnp.dot(gradient, tx)


@jax.custom_vjp
def smoothed_relu(x, key):
    z = jax.random.normal(key, (128,) + x.shape)
    return jnp.mean(jax.nn.relu(x + SIGMA * z), axis=0)


def smoothed_relu_fwd(x, key):
    z = jax.random.normal(key, (128,) + x.shape)
    y = jax.nn.relu(x + SIGMA * z)
    return jnp.mean(y, axis=0), (y, z)


def smoothed_relu_bwd(res, g):  # the same estimator, elementwise
    y, z = res
    return g * jnp.mean(y * z, axis=0) / SIGMA, None


smoothed_relu.defvjp(smoothed_relu_fwd, smoothed_relu_bwd)
