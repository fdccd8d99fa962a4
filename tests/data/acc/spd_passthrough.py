"""A quadratic form `sum(rhs * matrix^-1 rhs)` of a positive definite matrix, its custom_jvp reached through the
public function that passes the matrix straight through, with no Cholesky factor (`None`: inference would not draw
that), as a library's wrapper does (tests/test_unseen_classes.py). The primal reads the matrix through its Cholesky
factor (its lower triangle only), so only symmetric steps stay in its domain: `_quad_jvp` is right along those,
`_quad_doubled_jvp` doubles the matrix term."""

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular


def _form(matrix, rhs, chol):
    # the lower triangle only (as LAPACK's potrf reads it): the upper one is assumed to mirror it
    chol = jax.lax.linalg.cholesky(matrix, symmetrize_input=False) if chol is None else chol
    s = solve_triangular(chol, rhs, lower=True)
    return jnp.sum(s * s)


@jax.custom_jvp
def _quad(matrix, rhs, chol):
    return _form(matrix, rhs, chol)


@_quad.defjvp
def _quad_jvp(primals, tangents):
    (matrix, rhs, chol), (dmatrix, drhs, _) = primals, tangents
    full = jnp.linalg.solve(matrix, rhs)
    return _form(matrix, rhs, chol), 2 * jnp.sum(full * drhs) - jnp.sum(full * (dmatrix @ full))


@jax.custom_jvp
def _quad_doubled(matrix, rhs, chol):
    return _form(matrix, rhs, chol)


@_quad_doubled.defjvp
def _quad_doubled_jvp(primals, tangents):
    (matrix, rhs, chol), (dmatrix, drhs, _) = primals, tangents
    full = jnp.linalg.solve(matrix, rhs)
    return _form(matrix, rhs, chol), 2 * jnp.sum(full * drhs) - 2 * jnp.sum(full * (dmatrix @ full))


def quad_form(matrix, rhs):
    """`sum(rhs * matrix^-1 rhs)` for a symmetric positive definite `matrix`."""
    return _quad(matrix, rhs, None)


def quad_form_doubled(matrix, rhs):
    """`sum(rhs * matrix^-1 rhs)` for a symmetric positive definite `matrix`."""
    return _quad_doubled(matrix, rhs, None)
