"""A sparse solve taking its matrix in CSR form, as host-solver bindings take it: row offsets and column indices
beside the values. Random integers never make a valid structure (the offsets must start at 0, never decrease and
end at the number of stored values), so the solve refuses every rung of the plain ladder; a diagonal structure
runs."""

import jax
import jax.numpy as jnp
import numpy as np


def _dense(values, offsets, columns, n):
    matrix = np.zeros((n, n), values.dtype)
    for row in range(n):
        for k in range(offsets[row], offsets[row + 1]):
            matrix[row, columns[k]] += values[k]
    return matrix


def _host_solve(values, offsets, columns, b):
    values, offsets, columns, b = map(np.asarray, (values, offsets, columns, b))
    if offsets.shape != (b.shape[-1] + 1,) or offsets[0] != 0 or offsets[-1] != values.shape[-1] or np.any(
            np.diff(offsets) < 0):
        raise ValueError("csr_offsets is not a row-pointer array for this system")
    return np.linalg.solve(_dense(values, offsets, columns, b.shape[-1]), b).astype(b.dtype)


def csr_solve(b_values, csr_values, csr_offsets, csr_columns):
    """Solve A x = b for a square CSR matrix A."""
    if not jnp.issubdtype(jnp.asarray(csr_offsets).dtype, jnp.integer):
        raise TypeError("csr_offsets must be integers")
    return jax.pure_callback(_host_solve, jax.ShapeDtypeStruct(b_values.shape, b_values.dtype), csr_values,
                             csr_offsets, csr_columns, b_values, vmap_method="sequential")
