"""A sparse matrix-vector product in coordinate form, as sparse solvers' wrappers take it: a compiled kernel (here a
NumPy callback) that rejects coordinate buffers of any type but int32, with a message that names no type, and a
custom_jvp made for each call. Only the docstring says which operands hold integer row and column indices
(`rows: [nnz; int32]: the row indices`): their names are no index names. Drawn as floats, the kernel rejects them
and nothing was checked. `spmv`'s JVP rule is right; `spmv_doubled`'s doubles the values' term."""

import jax
import jax.numpy as jnp
import numpy as np


def _kernel(rows, cols, values, x):
    if rows.dtype != np.int32 or cols.dtype != np.int32:
        raise ValueError("unexpected buffer layout")
    out = np.zeros(x.shape[-1], x.dtype)
    np.add.at(out, rows, values * x[cols])
    return out


def _product(rows, cols, values, x):
    shape = jax.ShapeDtypeStruct((x.shape[-1],), x.dtype)
    return jax.pure_callback(_kernel, shape, rows, cols, values, x, vmap_method="sequential")


def _linear(rows, cols, values, x):  # the tangent in jax.numpy: linear and transposable, as jax.grad needs
    return jnp.zeros(x.shape[-1], x.dtype).at[rows].add(values * x[cols])


def _rule():
    @jax.custom_jvp
    def product(rows, cols, values, x):
        return _product(rows, cols, values, x)

    @product.defjvp
    def product_jvp(primals, tangents):
        rows, cols, values, x = primals
        _, _, t_values, t_x = tangents
        tangent = _linear(rows, cols, t_values, x) + _linear(rows, cols, values, t_x)
        return _product(rows, cols, values, x), tangent

    return product


def _doubled_rule():
    @jax.custom_jvp
    def doubled_product(rows, cols, values, x):
        return _product(rows, cols, values, x)

    @doubled_product.defjvp
    def doubled_product_jvp(primals, tangents):
        rows, cols, values, x = primals
        _, _, t_values, t_x = tangents
        tangent = _linear(rows, cols, 2.0 * t_values, x) + _linear(rows, cols, values, t_x)
        return _product(rows, cols, values, x), tangent

    return doubled_product


def spmv(rows, cols, values, x):
    """Multiply a sparse matrix in coordinate form by a vector.

    Args:
        rows: [nnz; int32]: the row indices of the nonzeros
        cols: [nnz; int32]: the column indices of the nonzeros
        values: [nnz; float32]: the nonzeros
        x: [n; float32]: the vector

    Returns:
        the product, [n]
    """
    return _rule()(rows, cols, values, x)


def spmv_doubled(rows, cols, values, x):
    """Multiply a sparse matrix in coordinate form by a vector.

    Args:
        rows: [nnz; int32]: the row indices of the nonzeros
        cols: [nnz; int32]: the column indices of the nonzeros
        values: [nnz; float32]: the nonzeros
        x: [n; float32]: the vector
    """
    return _doubled_rule()(rows, cols, values, x)
