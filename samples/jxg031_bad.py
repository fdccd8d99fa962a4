"""JXG031 bad: symmetric=True for a matrix that is not symmetric, so JAX uses matvec as its own transpose and
solve as transpose_solve. Plain JAX:

    exact = lambda a, b: jnp.linalg.solve(a + 4 * jnp.eye(3), b).sum()
    assumed_symmetric(a, b) == exact(a, b)                                   # the value is right
    jax.grad(assumed_symmetric, argnums=1)(a, b) != jax.grad(exact, argnums=1)(a, b)
"""

import jax.numpy as jnp
from jax import lax

JAXDIAG = {"assumed_symmetric": {"args": ["f32[3,3]", "f32[3]"]}}


def assumed_symmetric(a, b):  # jaxdiag-expect: JXG014
    m = a + 4.0 * jnp.eye(3, dtype=a.dtype)

    def solve(matvec, rhs):
        return jnp.linalg.solve(m, rhs)

    return jnp.sum(lax.custom_linear_solve(lambda x: m @ x, b, solve, symmetric=True))  # jaxdiag-expect: JXG031
