"""Arrays a parameter's annotation describes in jaxtyping's notation: `Float[Array, "batch seq heads dim"]`,
`Int[Array, "batch seq"]`, `Bool[Array, ""]`, each possibly `| None` or inside `Optional[...]`.

Attention and state-space kernels annotate every operand this way, and the annotation is the author's own contract
for it: its dtype family (a `key: Float[...]` is a float array, never a PRNG key; an `Int[...]` holds integers) and
its axes, shared by name between operands. Read from the `def`'s source, so a postponed or quoted annotation reads
as an evaluated one and jaxtyping need not be importable here.

The dims string is read as jaxtyping reads it: names and integers are axes; `#name` (broadcastable) and `?name`
are the axis `name`; `_` and `_name` are anonymous axes (each its own); a variadic `*name` or `...` may stand for no
axis and is read as none; a symbolic expression (`n+1`) makes the shape unreadable (the dtype family still counts).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

# jaxtyping's dtype annotations, by the family of values they admit
_FAMILIES = (
    ("float", re.compile(r"^(Float(16|32|64)?|BFloat16|Inexact|Real)$")),
    ("complex", re.compile(r"^Complex(64|128)?$")),
    ("int", re.compile(r"^(U?Int(8|16|32|64)?|Integer)$")),
    ("bool", re.compile(r"^Bool$")),
    ("key", re.compile(r"^Key$")),
    ("any", re.compile(r"^(Shaped|Num)$")),
)
_NAME = re.compile(r"^[A-Za-z_]\w*$")


@dataclass(frozen=True)
class AnnotatedArray:
    family: str  # "float", "complex", "int", "bool", "key" or "any"
    axes: tuple[str, ...] | None  # None where the dims string holds an expression


def annotated_arrays(fn: Any) -> dict[int, AnnotatedArray]:
    """{position: annotated array} of the positional parameters of `fn` annotated in jaxtyping's notation."""
    from .._harness.source import function_source

    found = function_source(fn)
    if found is None:
        return {}
    params = found.node.args.posonlyargs + found.node.args.args
    out = {}
    for i, param in enumerate(params):
        annotated = _read(param.annotation, i) if param.annotation is not None else None
        if annotated is not None:
            out[i] = annotated
    return out


def _read(node: ast.expr, position: int) -> AnnotatedArray | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
        try:
            return _read(ast.parse(node.value, mode="eval").body, position)
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # `Float[...] | None`
        return _read(node.left, position) or _read(node.right, position)
    if not isinstance(node, ast.Subscript):
        return None
    head = _last_name(node.value)
    if head in ("Optional", "Union"):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return next((a for a in (_read(p, position) for p in parts) if a is not None), None)
    family = next((f for f, pattern in _FAMILIES if pattern.match(head)), None)
    index = node.slice
    if family is None or not (isinstance(index, ast.Tuple) and len(index.elts) == 2):
        return None
    dims = index.elts[1]
    if not (isinstance(dims, ast.Constant) and isinstance(dims.value, str)):
        return None
    return AnnotatedArray(family, _axes(dims.value, position))


def _axes(dims: str, position: int) -> tuple[str, ...] | None:
    axes: list[str] = []
    for k, token in enumerate(dims.split()):
        token = token.lstrip("#?")
        if token == "..." or token.startswith("*"):
            continue
        if token.startswith("_"):
            axes.append(f"_{position}_{k}")  # anonymous: an axis of its own, a distinct name per place
        elif token.isdigit() or _NAME.match(token):
            axes.append(token)
        else:
            return None
    return tuple(axes)


def _last_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""
