"""Parameters given a Python int (or a tuple of ints) rather than an array, and the ladders of values they climb.

A function's parameter (`L: int`, `n`, a static `output_shape`) and a primitive's required bind param that nobody
passes (`_assumed_params`) are recognised the same way: by an `int` / `tuple[int, ...]` annotation, an int default,
else a conventional name (`name_kind`). Each takes INT_LADDER's (or SHAPE_LADDER's) value of a rung in turn. One
annotated `str` (a tag, a name) is recognised here too, and takes the name STR_VALUE on every rung, unless it names
a mapped axis for collectives (`axis_name`).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

from .._loading._inputs import Static

# Python ints for a function's int parameters and for required bind params (`_assumed_params`), one per rung.
INT_LADDER: tuple[int, ...] = (4, 2, 3, 8)
SHAPE_LADDER: tuple[tuple[int, ...], ...] = ((4,), (3,), (4, 4), (2, 3))
INT_ANNOTATION = re.compile(r"^(int|builtins\.int|np\.integer|numpy\.integer)$")
# A parameter annotated `str` (a tag, a name: `sow(value, name: str)`) takes this string on every rung: any name
# serves, while an array drawn there reaches a bind param or a dict key as a value no caller passes.
STR_ANNOTATION = re.compile(r"^(str|builtins\.str)$")
STR_VALUE = "jaxdiag"
# ... except JAX's name for a mapped axis (`axis_name: str`, `seq_axis_name`): a collective on it (`lax.all_gather(x,
# axis_name=axis_name)`) runs only inside a `shard_map`/`pmap` binding that name, so no string serves outside one
# (`jaxdiag sharding` checks such code on a mesh).
COLLECTIVE_AXIS = re.compile(r"^(\w+_)?axis_names?$")
SHAPE_ANNOTATION = re.compile(r"^(tuple|Tuple|typing\.Tuple|Sequence|typing\.Sequence|list|List)\[\s*int\b")
_OPTIONAL = re.compile(r"^(?:typing\.)?Optional\[(.+)\]$|^(.+)\|None$|^None\|(.+)$")
# Names numerical code gives a count, an order, a size or an axis (`n`, `L` a bandlimit, `n_steps`, `num_points`,
# `block_size`, `nside`, `max_degree`): an int. The one list for function parameters and bind params alike.
COUNT_NAME = re.compile(r"^(n|L|axis|nside)$|^(n|num)_\w+$|"
                        r"(^|_)(order|degree|size|length|count|bandlimit|nside|modes|levels|steps)$")
# ... and for bind params only, a single letter or a letter's bound (`L_lower`, `kmax`): a bind param is never an
# array, whereas a function's `x` or `x_max` usually is one.
LETTER_NAME = re.compile(r"^[A-Za-z]$|^[A-Za-z]_?(max|lower|upper)$")
# Names of a tuple of ints (`output_shape`, `dims`, `grid_sizes`).
SHAPE_NAME = re.compile(r"(^|_)(shape|shapes|dims|sizes|extent|extents)$")
# ... and for a static only (hashable, so never an array), a position's name (`ignore_index`, `dim`, `idx`): a
# function's `index` or `idx` argument is usually an array of them.
STATIC_INDEX_NAME = re.compile(r"(^|_)(index|idx|dim|rank)$")


def annotation_kind(text: str) -> str | None:
    """"int", "shape" (a tuple of ints), "str" or None for an annotation's text (`Optional[int]`, `int | None`:
    "int")."""
    optional = _OPTIONAL.match(text.replace(" ", ""))
    text = next(g for g in optional.groups() if g) if optional else text.replace(" ", "")
    if STR_ANNOTATION.match(text):
        return "str"
    return "int" if INT_ANNOTATION.match(text) else "shape" if SHAPE_ANNOTATION.match(text) else None


def name_kind(name: str, bind_param: bool = False) -> str | None:
    """"shape", "int" or None from a name alone (`bind_param`: a single letter counts too)."""
    if SHAPE_NAME.search(name):
        return "shape"
    if COUNT_NAME.search(name) or (bind_param and LETTER_NAME.search(name)):
        return "int"
    return None


def int_kind(param: inspect.Parameter, static: bool = False) -> tuple[str, bool] | None:
    """("int" or "shape", guessed from its name only) for a parameter given a Python int (or int tuple) rather than
    an array: annotated `int` / `Optional[int]` / `int | None` / `tuple[int, ...]`, or unannotated with an int
    default, or with neither and a count or shape name (`name_kind`; a `static` one named as an index too); else
    None."""
    if param.annotation is not param.empty:
        from .._harness.source import annotation_text

        kind = annotation_kind(annotation_text(param.annotation))
        return (kind, False) if kind and not (kind == "str" and COLLECTIVE_AXIS.match(param.name)) else None
    if param.default is not param.empty:
        return ("int", False) if type(param.default) is int else None
    guessed = name_kind(param.name) or ("int" if static and STATIC_INDEX_NAME.search(param.name) else None)
    return (guessed, True) if guessed else None


def ladder_values(kinds: dict[Any, str]) -> list[dict[Any, Any]]:
    """One {key: value} per rung: INT_LADDER's for an "int" key, SHAPE_LADDER's for a "shape" one, STR_VALUE for a
    "str" one. With two or more "int" keys, two rungs more, where they differ: increasing in position order, then
    decreasing (an order below a recurrence length, `k < M`, or a length above a count), spread over the ladder."""
    same = [{key: INT_LADDER[r] if kind == "int" else STR_VALUE if kind == "str" else shape_ladder(kind)[r]
             for key, kind in kinds.items()} for r in range(len(INT_LADDER))]
    ints = [key for key, kind in kinds.items() if kind == "int"]
    if len(ints) < 2:
        return same
    spread = _spread(len(ints))
    return same + [{**same[0], **dict(zip(ints, order))} for order in (spread, spread[::-1])]


def shape_ladder(kind: str) -> tuple[tuple[int, ...], ...]:
    """SHAPE_LADDER for a "shape" of unknown length; for "shapeK" (a tuple the code always gives K entries, as its
    binds or its annotation say) the same rungs at that length: all 4, all 3, increasing, all 2."""
    arity = int(kind[len("shape"):] or 0)
    if not arity:
        return SHAPE_LADDER
    return ((4,) * arity, (3,) * arity, tuple(range(2, 2 + arity)), (2,) * arity)


def _spread(n: int) -> tuple[int, ...]:
    """`n` distinct ints, increasing, from the ladder's smallest to its largest (2 and 8 for two)."""
    ladder = sorted(set(INT_LADDER))
    if n > len(ladder):
        return tuple(range(2, 2 + n))
    picks = [round(k * (len(ladder) - 1) / (n - 1)) for k in range(n)]
    return tuple(ladder[p] for p in picks)


def int_rungs(ints: dict[int, str]) -> list[dict[int, Static]]:
    """One {position: Static value} per rung of `ladder_values` ([{}] without int positions)."""
    return [{i: Static(value) for i, value in rung.items()} for rung in ladder_values(ints)] if ints else [{}]


def rungs(ladder: Iterator[list[Any]], truths: set[int], ints: dict[int, str]
          ) -> Iterator[tuple[list[Any], set[int], dict[int, Static]]]:
    """Each rung of the shape ladder with each rung of the int positions' values in turn, and the positions to draw
    as booleans: first `truths` (where the target's code uses an operand as a truth value), then none."""
    for candidate in ladder:
        for fixed in int_rungs(ints):
            if truths:
                yield candidate, truths, fixed
            yield candidate, set(), fixed
