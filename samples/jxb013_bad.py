"""JXB013 bad: input validation with a Python `if` on array values works on each example, but under vmap (and
jit) the values are tracers: `TracerBoolConversionError`."""

import jax.numpy as jnp

JAXDIAG = {"safe_log": {"args": ["f32[3]@positive"]}}


def safe_log(x):
    if jnp.any(x <= 0):  # jaxdiag-expect: JXB013
        raise ValueError("safe_log needs positive inputs")
    return jnp.log(x)
