"""A Cholesky factorisation with a custom_jvp whose tangent forgets to halve the diagonal, used by a log-determinant
that builds a symmetric positive-definite matrix from its input. On random matrices (not symmetric, not
definite) the Cholesky factor is NaN and every comparison is skipped, so the bug would pass vacuously; jaxdiag
checks the nested rule at the values the function actually passes it (JXG024)."""

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

JAXDIAG = {"logdet": {"args": ["f32[3,3]"]}}


@jax.custom_jvp
def chol(a):
    return jnp.linalg.cholesky(a)


@chol.defjvp
def chol_jvp(primals, tangents):  # jaxdiag-expect: JXG024
    (a,), (da,) = primals, tangents
    L = chol(a)
    da = 0.5 * (da + da.T)  # cholesky reads the symmetric part of its input
    tmp = solve_triangular(L, solve_triangular(L, da, lower=True).T, lower=True).T  # L^-1 dA L^-T
    phi = jnp.tril(tmp)  # the diagonal must be halved: tril(tmp) - diag(tmp) / 2
    return L, L @ phi


def logdet(x):  # jaxdiag-expect: JXG014, JXG019
    a = x @ x.T + 3.0 * jnp.eye(x.shape[0], dtype=x.dtype)
    return 2.0 * jnp.sum(jnp.log(jnp.diag(chol(a))))
