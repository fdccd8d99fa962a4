"""JXN018 good: the `soft_max` of `jxn018_bad.py` with `temperature` declared non-differentiable
(`nondiff_argnums`), so JAX itself never asks for its tangent and the rule has nothing to refuse."""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def soft_max(x, temperature: float = 0.5):
    return temperature * jax.nn.logsumexp(x / temperature)


@soft_max.defjvp
def _soft_max_jvp(temperature, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return soft_max(x, temperature), jnp.sum(jax.nn.softmax(x / temperature) * x_dot)
