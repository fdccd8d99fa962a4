"""JXG030 bad: the same solve passed as transpose_solve for a matrix that is not symmetric. Forward values and
forward-mode derivatives are right; reverse mode solves with the matrix instead of its transpose. Plain JAX:

    exact = lambda a, b: jnp.linalg.solve(a + 4 * jnp.eye(3), b).sum()
    reused_solve(a, b) == exact(a, b)                                      # the value is right
    jax.grad(reused_solve, argnums=1)(a, b) != jax.grad(exact, argnums=1)(a, b)
"""

import jax.numpy as jnp
from jax import lax

JAXDIAG = {"reused_solve": {"args": ["f32[3,3]", "f32[3]"]}}


def reused_solve(a, b):  # jaxdiag-expect: JXG014
    m = a + 4.0 * jnp.eye(3, dtype=a.dtype)

    def solve(matvec, rhs):  # jaxdiag-expect: JXG030
        return jnp.linalg.solve(m, rhs)

    return jnp.sum(lax.custom_linear_solve(lambda x: m @ x, b, solve, transpose_solve=solve))
