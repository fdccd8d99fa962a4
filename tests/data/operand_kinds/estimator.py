"""A perturbed maximum whose JVP is the score-function estimate of the derivative of its expectation: it differs
from the derivative of the sampled value at a given key by construction."""

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
    gradient = jnp.mean(values[:, None] * z, axis=0) / SIGMA
    return perturbed_max(x, key), jnp.dot(gradient, tx)
