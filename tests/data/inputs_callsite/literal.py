"""A JVP that gives no tangent for the exponent, because every caller passes it as a Python literal (`3`): a
constant, never differentiated. Drawn as a float array and perturbed, the rule looks like it ignores an argument."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def power_no_nan(x, y):
    """x**y with 0**0 = 1 and a finite slope at 0."""
    return jnp.where(x == 0, jnp.where(y == 0, 1.0, 0.0), x ** y)


@power_no_nan.defjvp
def _power_jvp(primals, tangents):
    x, y = primals
    dx, _ = tangents
    safe_x = jnp.where(x == 0, 1.0, x)
    return power_no_nan(x, y), y * safe_x ** (y - 1) * dx


def cubic_energy(x):
    """The package's caller: the exponent is a literal."""
    return power_no_nan(x, 3).sum()
