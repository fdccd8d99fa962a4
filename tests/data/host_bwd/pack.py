"""A custom_vjp whose bwd runs NumPy on the cotangent (it cannot be traced, only run) and, like the primal's
callers, assumes a square matrix: the primal also runs on a 2x3 matrix, where the bwd builds a 2x2 cotangent. On
square matrices, the only ones it is meant for, it is right (under jit or vmap its NumPy fails: that JXG016 is
true)."""

import jax
import jax.numpy as jnp
import numpy as np


@jax.custom_vjp
def pack_lower(mat):
    """The lower triangle of `mat`, row by row."""
    rows, cols = jnp.tril_indices(mat.shape[0])
    return mat[rows, cols]


def _pack_lower_fwd(mat):
    return pack_lower(mat), mat


def _pack_lower_bwd(mat, g):
    dtype = np.asarray(mat).dtype
    g = np.asarray(g, dtype)
    n = int(np.sqrt(2 * g.size))
    out = np.zeros((n, n), dtype)
    out[np.tril_indices(n)] = g
    return (out,)


pack_lower.defvjp(_pack_lower_fwd, _pack_lower_bwd)
