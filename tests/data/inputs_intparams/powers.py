"""A custom_jvp built by a factory for an order `n`, reached only through public functions taking `n` (annotated
`n: int`, and unannotated): `range(n)` needs a Python int."""

import jax
import jax.numpy as jnp


def make(n: int):
    @jax.custom_jvp
    def power_sum(x):
        return sum(x ** k for k in range(1, n + 1))

    @power_sum.defjvp
    def _power_sum_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return power_sum(x), sum(k * x ** (k - 1) for k in range(1, n + 1)) * t

    return power_sum


def smooth(x: jnp.ndarray, n: int):
    return make(n)(x)
