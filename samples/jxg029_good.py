"""JXG029 good: solve inverts matvec. A conjugate-gradient call (`jax.scipy.sparse.linalg.cg`, built on
custom_linear_solve) on a positive-definite matrix is clean too: JAX's own solvers are trusted."""

import jax
import jax.numpy as jnp
from jax import lax

JAXDIAG = {"exact_solve": {"args": ["f32[3,3]", "f32[3]"]},
           "conjugate_gradient": {"args": ["f32[3,3]", "f32[3]"]}}


def exact_solve(a, b):
    m = a + 4.0 * jnp.eye(3, dtype=a.dtype)

    def solve(matvec, rhs):
        return jnp.linalg.solve(m, rhs)

    def transpose_solve(vecmat, rhs):
        return jnp.linalg.solve(m.T, rhs)

    return lax.custom_linear_solve(lambda x: m @ x, b, solve, transpose_solve)


def conjugate_gradient(a, b):
    m = a @ a.T + 3.0 * jnp.eye(3, dtype=a.dtype)
    x, _ = jax.scipy.sparse.linalg.cg(lambda v: m @ v, b, tol=1e-6)
    return x
