"""JXG030 good: one solver for both directions that solves with the linear map it is handed (matvec for solve,
the transposed vecmat for transpose_solve)."""

import jax
import jax.numpy as jnp
from jax import lax

JAXDIAG = {"transposed_solve": {"args": ["f32[3,3]", "f32[3]"]}}


def transposed_solve(a, b):
    m = a + 4.0 * jnp.eye(3, dtype=a.dtype)

    def dense_solve(matvec, rhs):  # solves with whatever linear map it is given
        return jnp.linalg.solve(jax.jacfwd(matvec)(rhs), rhs)

    return jnp.sum(lax.custom_linear_solve(lambda x: m @ x, b, dense_solve, transpose_solve=dense_solve))
