"""double_only.py with a JVP twice the true slope."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def log1p_exp(x):
    if x.dtype != jnp.float64:
        raise TypeError(f"log1p_exp requires float64 precision, got {x.dtype}")
    return jnp.logaddexp(x, 0.0)


@log1p_exp.defjvp
def _log1p_exp_jvp(primals, tangents):  # jaxdiag-expect: JXG024
    (x,), (t,) = primals, tangents
    return log1p_exp(x), 2 * t * jax.nn.sigmoid(x)
