"""Uses carryconst's quadrature under differentiation: its JVP rule binds `weighted_sum_p` on module constants."""

import jax
import jax.numpy as jnp

from carryconst import ops


def quad(a):
    return ops.integral(jnp.sin, a)


def main():
    a = jnp.array(2.0)
    print(quad(a), jax.grad(quad)(a), jax.vmap(jax.grad(quad))(jnp.array([1.0, 2.0])))
