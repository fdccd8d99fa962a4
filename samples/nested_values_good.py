"""The fix of nested_values_bad.py: the Cholesky tangent halves the diagonal of L^-1 dA L^-T."""

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

JAXDIAG = {"logdet": {"args": ["f32[3,3]"]}}


@jax.custom_jvp
def chol(a):
    return jnp.linalg.cholesky(a)


@chol.defjvp
def chol_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    L = chol(a)
    da = 0.5 * (da + da.T)  # cholesky reads the symmetric part of its input
    tmp = solve_triangular(L, solve_triangular(L, da, lower=True).T, lower=True).T  # L^-1 dA L^-T
    phi = jnp.tril(tmp) - 0.5 * jnp.diag(jnp.diag(tmp))
    return L, L @ phi


def logdet(x):
    a = x @ x.T + 3.0 * jnp.eye(x.shape[0], dtype=x.dtype)
    return 2.0 * jnp.sum(jnp.log(jnp.diag(chol(a))))
