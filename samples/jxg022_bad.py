"""JXG022 bad: the rule multiplies the tangent of the integer exponent. JAX passes float0 tangents for integer
arguments, so any jax.grad fails with "ufunc 'multiply' did not contain a loop ... float0"."""

import jax
import jax.numpy as jnp

JAXDIAG = {"int_pow": {"args": ["f32[3]@positive", "i32[3]"]}}


@jax.custom_jvp
def int_pow(x, n):
    return x ** n


@int_pow.defjvp
def int_pow_jvp(primals, tangents):  # jaxdiag-expect: JXG022
    (x, n), (tx, tn) = primals, tangents
    y = x ** n
    return y, n * x ** (n - 1) * tx + y * jnp.log(x) * tn
