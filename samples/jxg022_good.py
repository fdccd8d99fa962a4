"""JXG022 good: the tangent of the integer argument (always a float0 zero) is ignored."""

import jax
import jax.numpy as jnp

JAXDIAG = {"int_pow": {"args": ["f32[3]@positive", "i32[3]"]}}


@jax.custom_jvp
def int_pow(x, n):
    return x ** n


@int_pow.defjvp
def int_pow_jvp(primals, tangents):
    (x, n), (tx, _) = primals, tangents
    return x ** n, n * x ** (n - 1) * tx
