"""The fix of symbolic_zero_nan_bad.py: a symbolic-zero tangent stays symbolic, so the partial derivative in `y`
(infinite at `y = 0`) is only used when `y` is perturbed."""

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero

JAXDIAG = {"scaled_sqrt": {"args": ["f32[4]", "f32[4]@positive"]}}


@jax.custom_jvp
def scaled_sqrt(x, y):
    return x * jnp.sqrt(y)


def scaled_sqrt_jvp(primals, tangents):
    x, y, (tx, ty) = *primals, tangents
    s = jnp.sqrt(y)
    t = jnp.zeros_like(s)
    if not isinstance(tx, SymbolicZero):
        t = t + tx * s
    if not isinstance(ty, SymbolicZero):  # only a perturbed y meets the infinite partial derivative at y = 0
        t = t + ty * x / (2.0 * s)
    return x * s, t


scaled_sqrt.defjvp(scaled_sqrt_jvp, symbolic_zeros=True)
