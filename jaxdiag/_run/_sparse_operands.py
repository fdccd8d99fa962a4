"""Operands that together describe a sparse matrix in CSR form: row offsets (`indptr`, `csr_offsets`), column
indices (`indices`, `csr_columns`) and the values beside them.

Random arrays never make a valid structure: offsets must run from 0 to the number of stored values, one more than
the rows, and columns must index the columns. A target whose operands are named so gets one rung ahead of the
ladder: for n rows, offsets `i32[n+1]` and columns `i32[n]` at the positions 0, 1, 2, ... (the `diagonal` domain:
a diagonal matrix, one stored value per row, nonsingular), and every other array (values, right-hand sides) of
shape `[n]`. A library documenting one complete call in a docstring is read first (`_jobs/_doc_examples`); this
rung is for the rules no example reaches.
"""

from __future__ import annotations

import re

import numpy as np

from .._loading._inputs import ArgSpec

_OFFSETS = re.compile(r"(^|_)(indptr|offsets|row_ptr|rowptr|row_offsets|row_pointers)$")
_COLUMNS = re.compile(r"(^|_)(indices|columns|col_ind|col_idx|colind|col_indices)$")
# The number of rows of the rung.
ROWS = 3


def csr_rungs(names: list[str], arrays: list[int], dtype: np.dtype) -> list[list[ArgSpec]]:
    """[one candidate for the array positions `arrays`] when their names (`names`, by position) hold both row
    offsets and column indices; else []."""
    named = {i: names[i] for i in arrays if i < len(names)}
    offsets = [i for i, n in named.items() if _OFFSETS.search(n)]
    columns = [i for i, n in named.items() if _COLUMNS.search(n)]
    if not offsets or not columns:
        return []
    int32 = np.dtype(np.int32)
    return [[ArgSpec(int32, (ROWS + 1,), "diagonal") if i in offsets
             else ArgSpec(int32, (ROWS,), "diagonal") if i in columns
             else ArgSpec(dtype, (ROWS,)) for i in arrays]]
