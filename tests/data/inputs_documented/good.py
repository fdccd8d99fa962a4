"""`spmv_p` is bound only by `spmv`, whose keyword-only `shape` every caller in the package passes from a matrix
object (`shape=self.shape`): no literal anywhere holds it. `spmv`'s docstring documents one complete call."""

import jax.numpy as jnp

from ._kernel import make_spmv

spmv_p = make_spmv("inputs_documented_spmv")


def spmv(data, indices, indptr, v, *, shape):
    """CSR matrix times vector.

    >>> from inputs_documented.good import spmv
    >>> data = jnp.array([1.0, 2.0, 3.0])
    >>> indices = jnp.array([0, 2, 1], dtype=jnp.int32)
    >>> indptr = jnp.array([0, 2, 3], dtype=jnp.int32)
    >>> spmv(data, indices, indptr, jnp.array([1.0, -1.0, 0.5]), shape=(2, 3))
    Array([ 2., -3.], dtype=float32)
    """
    return spmv_p.bind(data, indices, indptr, v, shape=shape)


class CSRMatrix:
    def __init__(self, data, indices, indptr, shape):
        self.data, self.indices, self.indptr, self.shape = data, indices, indptr, shape

    def __matmul__(self, v):
        return spmv(self.data, self.indices, self.indptr, v, shape=self.shape)


def row_sums(matrix):
    return matrix @ jnp.ones(matrix.shape[1], matrix.data.dtype)
