"""As `good`, but the JVP forgets the tangent of `data`: checked at the documented call, it is caught there."""

import jax.numpy as jnp

from ._kernel import make_spmv

spmv_p = make_spmv("inputs_documented_spmv_bad", data_tangent=False)


def spmv(data, indices, indptr, v, *, shape):
    """CSR matrix times vector.

    >>> from inputs_documented.bad import spmv
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
