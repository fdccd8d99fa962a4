"""A kernel that computes in double precision only and says so to 32-bit inputs (as compiled scientific kernels
do), with a custom JVP; its module never turns x64 on."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def log1p_exp(x):
    if x.dtype != jnp.float64:
        raise TypeError(f"log1p_exp requires float64 precision, got {x.dtype}")
    return jnp.logaddexp(x, 0.0)


@log1p_exp.defjvp
def _log1p_exp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1p_exp(x), t * jax.nn.sigmoid(x)
