"""JXG029 bad: lax.custom_linear_solve with a solve that returns twice the solution of matvec(x) = b. JAX never
checks `matvec(solve(matvec, b)) == b`, and the gradient it derives from that promise is silently wrong. Plain JAX,
with `m = a + 4 * eye` as the function builds it:

    exact = lambda a, b: jnp.linalg.solve(a + 4 * jnp.eye(3), b).sum()
    jax.grad(lambda a: scaled_solve(a, b).sum())(a)   # twice jax.grad(exact)(a, b), not equal to it
"""

import jax.numpy as jnp
from jax import lax

JAXDIAG = {"scaled_solve": {"args": ["f32[3,3]", "f32[3]"]}}


def scaled_solve(a, b):  # jaxdiag-expect: JXG014
    m = a + 4.0 * jnp.eye(3, dtype=a.dtype)

    def double_solve(matvec, rhs):  # jaxdiag-expect: JXG029
        return 2.0 * jnp.linalg.solve(m, rhs)

    def transpose_solve(vecmat, rhs):
        return jnp.linalg.solve(m.T, rhs)

    return lax.custom_linear_solve(lambda x: m @ x, b, double_solve, transpose_solve)
