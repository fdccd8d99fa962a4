"""Factories closing over a constant matrix, documented or annotated as one (`A : scipy.sparse.csr_matrix`, `W:
np.ndarray`), each returning a custom_vjp matrix-vector product. No call of the module passes a
matrix, so before, the rules they make were never checked (JXN012). `make_wrong_matvec`'s backward pass multiplies
by the matrix instead of its transpose: right only for a symmetric matrix."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse


def make_matvec(A):
    """The product with a constant sparse matrix, differentiable in the vector.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix
        The constant matrix.
    """
    dense = jnp.asarray(scipy.sparse.csr_matrix(A).toarray())

    @jax.custom_vjp
    def matvec(x):
        return dense @ x

    matvec.defvjp(lambda x: (matvec(x), None), lambda _, g: (dense.T @ g,))
    return matvec


def make_wrong_matvec(A):
    """The product with a constant sparse matrix, differentiable in the vector.

    Parameters
    ----------
    A : scipy.sparse.csr_matrix
        The constant matrix.
    """
    dense = jnp.asarray(scipy.sparse.csr_matrix(A).toarray())

    @jax.custom_vjp
    def matvec(x):
        return dense @ x

    matvec.defvjp(lambda x: (matvec(x), None), lambda _, g: (dense @ g,))  # A where A^T belongs
    return matvec


def make_dense_matvec(W: np.ndarray):
    dense = jnp.asarray(np.asarray(W))

    @jax.custom_vjp
    def matvec(x):
        return dense @ x

    matvec.defvjp(lambda x: (matvec(x), None), lambda _, g: (dense.T @ g,))
    return matvec
