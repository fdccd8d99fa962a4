"""lax.custom_linear_solve with solvers that break the promises its gradient rests on (JAX checks none of them):

- `scaled_solve`: solve returns twice the solution (JXG029 at its def line);
- `reused_solve`: the same solve passed as transpose_solve for a matrix that is not symmetric (JXG030);
- `assumed_symmetric`: symmetric=True for a matrix that is not symmetric (JXG031 at the call).

Plain JAX shows each one, with `m = a + 4 * eye` as the functions build it and `b` any vector:

    exact = lambda a, b: jnp.linalg.solve(a + 4 * jnp.eye(3), b).sum()
    jax.grad(lambda a: scaled_solve(a, b).sum())(a)       # twice jax.grad(exact)(a, b), not equal to it
    jax.grad(reused_solve, argnums=1)(a, b)               # != jax.grad(exact, argnums=1)(a, b)
    jax.grad(assumed_symmetric, argnums=1)(a, b)          # != jax.grad(exact, argnums=1)(a, b)

while the forward values of the last two equal `exact(a, b)`.
"""

import jax.numpy as jnp
from jax import lax

JAXDIAG = {"scaled_solve": {"args": ["f32[3,3]", "f32[3]"]},
           "reused_solve": {"args": ["f32[3,3]", "f32[3]"]},
           "assumed_symmetric": {"args": ["f32[3,3]", "f32[3]"]}}


def scaled_solve(a, b):  # jaxdiag-expect: JXG014
    m = a + 4.0 * jnp.eye(3, dtype=a.dtype)

    def double_solve(matvec, rhs):  # jaxdiag-expect: JXG029
        return 2.0 * jnp.linalg.solve(m, rhs)

    def transpose_solve(vecmat, rhs):
        return jnp.linalg.solve(m.T, rhs)

    return lax.custom_linear_solve(lambda x: m @ x, b, double_solve, transpose_solve)


def reused_solve(a, b):  # jaxdiag-expect: JXG014
    m = a + 4.0 * jnp.eye(3, dtype=a.dtype)

    def solve(matvec, rhs):  # jaxdiag-expect: JXG030
        return jnp.linalg.solve(m, rhs)

    return jnp.sum(lax.custom_linear_solve(lambda x: m @ x, b, solve, transpose_solve=solve))


def assumed_symmetric(a, b):  # jaxdiag-expect: JXG014
    m = a + 4.0 * jnp.eye(3, dtype=a.dtype)

    def solve(matvec, rhs):
        return jnp.linalg.solve(m, rhs)

    return jnp.sum(lax.custom_linear_solve(lambda x: m @ x, b, solve, symmetric=True))  # jaxdiag-expect: JXG031
