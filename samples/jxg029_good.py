"""JXG029 good: solve inverts matvec."""

import jax.numpy as jnp
from jax import lax

JAXDIAG = {"exact_solve": {"args": ["f32[3,3]", "f32[3]"]}}


def exact_solve(a, b):
    m = a + 4.0 * jnp.eye(3, dtype=a.dtype)

    def solve(matvec, rhs):
        return jnp.linalg.solve(m, rhs)

    def transpose_solve(vecmat, rhs):
        return jnp.linalg.solve(m.T, rhs)

    return lax.custom_linear_solve(lambda x: m @ x, b, solve, transpose_solve)

