"""JXG031 good: symmetric=True for a symmetric (positive-definite) matrix."""

import jax.numpy as jnp
from jax import lax

JAXDIAG = {"symmetric_solve": {"args": ["f32[3,3]", "f32[3]"]}}


def symmetric_solve(a, b):
    m = a @ a.T + 3.0 * jnp.eye(3, dtype=a.dtype)

    def solve(matvec, rhs):
        return jnp.linalg.solve(m, rhs)

    return jnp.sum(lax.custom_linear_solve(lambda x: m @ x, b, solve, symmetric=True))
