"""The shape a target's own error says an operand must have.

A library that validates its operands often says what it wanted: "alm shape (4,) != expected (15,) for lmax=4",
"expected shape (2, 6), got (4, 4)". The size follows a formula of the target's ints no ladder guesses (the
coefficients of a spherical-harmonic band limit, `(lmax + 1) (lmax + 2) / 2`), so the climb tries the rung again
with the one operand that had the shape the error quotes at the shape it asks for (`restated_by_error`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from .._loading._inputs import ArgSpec

_SHAPE = r"\(\s*(\d+(?:\s*,\s*\d+)*)?\s*,?\s*\)"
# (the shape it got, the shape it expected), in the two orders errors write them
_GOT_THEN_WANTED = re.compile(rf"{_SHAPE}\s*(?:!=|does not match|is not)\s*(?:the\s+)?expected\s*(?:shape\s*)?{_SHAPE}",
                              re.IGNORECASE)
_WANTED_THEN_GOT = re.compile(rf"expected\s+(?:an?\s+)?(?:array\s+of\s+)?(?:shape\s+)?{_SHAPE}\s*[,;]?\s*(?:but\s+)?"
                              rf"(?:got|found|received)\s+(?:shape\s+)?{_SHAPE}", re.IGNORECASE)
MAX_SIZE = 1 << 16  # entries of a restated operand at most: an error asking for a whole data set is not followed


def _shape(text: str | None) -> tuple[int, ...]:
    return tuple(int(d) for d in text.split(",")) if text else ()


def restated_by_error(error: str, templates: list[Any]) -> dict[int, ArgSpec]:
    """{position: the operand at the shape the error asks for}, when the error quotes the shape it got and the one it
    expected, and exactly one drawn operand has the shape it got; {} otherwise."""
    found = _GOT_THEN_WANTED.search(error)
    if found is not None:
        got, wanted = _shape(found.group(1)), _shape(found.group(2))
    elif (found := _WANTED_THEN_GOT.search(error)) is not None:
        wanted, got = _shape(found.group(1)), _shape(found.group(2))
    else:
        return {}
    at = [i for i, t in enumerate(templates) if isinstance(t, ArgSpec) and t.key is None and tuple(t.shape) == got]
    if len(at) != 1 or wanted == got or math.prod(wanted) > MAX_SIZE:
        return {}
    drawn = templates[at[0]]
    return {at[0]: ArgSpec(drawn.dtype, wanted, drawn.domain)}
