"""JXB013 good: the same guard written with `jnp.where`, which works on tracers (NaN marks invalid inputs)."""

import jax.numpy as jnp

JAXDIAG = {"safe_log": {"args": ["f32[3]@positive"]}}


def safe_log(x):
    return jnp.where(x > 0, jnp.log(jnp.where(x > 0, x, 1.0)), jnp.nan)
