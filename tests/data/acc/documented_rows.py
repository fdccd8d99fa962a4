"""A row-picking kernel checked where its documented call passes it values (`pick_rows`'s docstring example): its
checks draw their batches near those values, the row indices as the caller passes them, as the checks of a rule
nested in a function target do."""

import jax
import jax.numpy as jnp
from jax.interpreters import batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

rows_p = Primitive("documented_rows")


def _rows(values, rows):
    return values[rows]


rows_p.def_impl(_rows)
rows_p.def_abstract_eval(lambda values, rows: jax.core.ShapedArray(rows.shape, values.dtype))
mlir.register_lowering(rows_p, mlir.lower_fun(_rows, multiple_results=False))
batching.primitive_batchers[rows_p] = lambda args, dims: (jax.vmap(_rows, in_axes=dims)(*args), 0)


def pick_rows(values, rows):
    """Pick `values[rows]`.

    >>> pick_rows(jnp.array([1.0, 2.0, 3.0, 4.0]), jnp.array([3, 0, 2]))
    """
    return rows_p.bind(values, rows)
