"""A module with no JAXDIAG table: its public functions make custom solves with the user's own solvers."""

import jax.numpy as jnp
from jax import lax


def solve_shifted(a, b):
    m = a + 4.0 * jnp.eye(a.shape[0], dtype=a.dtype)

    def solve(matvec, rhs):
        return jnp.linalg.solve(m, rhs)

    return lax.custom_linear_solve(lambda x: m @ x, b, solve, transpose_solve=solve)


def cube_root(c):
    def newton(f, x0):
        return lax.fori_loop(0, 30, lambda _, x: x - f(x) / (3.0 * x ** 2), x0)

    def tangent_solve(g, y):
        return -y / g(1.0)

    return lax.custom_root(lambda x: x ** 3 - c, jnp.ones_like(c), newton, tangent_solve)
