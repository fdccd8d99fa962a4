"""What an operand's name says about its values, for operands no other source describes.

- Indices (`indices`, `row_indices`, `idx`, `index`): a primitive whose impl is a kernel jaxdiag cannot read (a
  compiled or generated one) indexes with them in its JVP or transpose rule, so they are drawn as integers inside
  every operand's extent (`_run._climb`). Not a CSR matrix's row offsets (`indptr`): random offsets are no structure,
  and a compiled kernel walking them reads out of bounds (a segfault); `_run._sparse_operands` draws a valid
  structure where both are named.
- A numerical tolerance (`tol`, `atol`, `rtol`, a root finder's `xtol`) is a setting of the algorithm, not data: it
  is drawn small and positive (`_run._climb`: a random one made a root search stop anywhere, and its derivative then
  disagreed with finite differences of a value it never converged to) and never differentiated
  (`_checks._gradref.GradState`), as every caller holds it constant.
"""

from __future__ import annotations

import re

_INDEX_NAME = re.compile(r"(^|_)(indices|index|idx|idxs|inds)$")
_TOLERANCE_NAME = re.compile(r"(^|_)([xfg]?tol|atol|rtol|tolerance)$")
TOLERANCE_DOMAIN = "0.000001..0.000002"  # an `@LO..HI` domain of the inputs' SPEC syntax


def index_named(names: list[str]) -> set[int]:
    """Positions whose name (a function's parameter, the operand a library's bind call passes) says they hold
    indices."""
    return {i for i, name in enumerate(names) if _INDEX_NAME.search(name)}


def is_tolerance(name: str) -> bool:
    return bool(_TOLERANCE_NAME.search(name))
