"""A primitive whose impl refuses what its program never passes, the pattern of a sparse solver's kernel refusing an
index outside its structure: rows must index the data rows 1..n-1 (row 0 is a header). Its program
(`recidx.example`) binds `take_rows_p` eagerly, with rows in [1, 2], and `take_rows_jit_p` inside `jax.jit`, where
the recording sees shapes only: jaxdiag draws the values there."""

import jax.numpy as jnp
import numpy as np
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import mlir


def _impl(table, rows):
    rows = np.asarray(rows)
    if (rows < 1).any() or (rows >= table.shape[0]).any():
        raise ValueError("rows must index the data rows 1..n-1 (row 0 is the header)")
    return jnp.asarray(np.asarray(table)[rows])


def _lowered(table, rows):
    return table[rows]


def _primitive(name):
    prim = Primitive(name)
    prim.def_impl(_impl)
    prim.def_abstract_eval(lambda table, rows: ShapedArray(rows.shape + table.shape[1:], table.dtype))
    mlir.register_lowering(prim, mlir.lower_fun(_lowered, multiple_results=False))
    return prim


take_rows_p = _primitive("take_rows")
take_rows_jit_p = _primitive("take_rows_jit")
