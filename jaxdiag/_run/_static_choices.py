"""The other values a static argument is declared to take: `kernel: Literal['pallas', 'reference'] = 'pallas'`.

Inference gives a static position its default. A default that cannot run here (a GPU kernel's `'pallas'` on a CPU
machine) leaves the target unchecked although its signature names a value that runs: the reference path its
author wrote to test the kernel against. When no input runs with the defaults, each other value of a `Literal`
annotation is tried in its place, one position at a time, in the order the annotation lists them.
"""

from __future__ import annotations

import ast
import typing
from collections.abc import Iterator
from typing import Any

from .._checks._base import Subject
from .._loading._inputs import Static
from . import _signature


def literal_alternatives(subject: Subject, statics: dict[int, Any]) -> Iterator[dict[int, Any]]:
    """`statics` with one defaulted static position at a time set to each other value its `Literal` annotation
    lists."""
    params = _signature.positional(_signature.signature_of(subject))
    for i, template in sorted(statics.items()):
        if i >= len(params) or not isinstance(template, Static) or params[i].default is params[i].empty:
            continue
        for value in literal_values(params[i].annotation):
            if value != template.value and type(value) is type(template.value):
                yield {**statics, i: Static(value)}


def literal_values(annotation: Any) -> list[Any]:
    """The values of a `Literal[...]` annotation, evaluated or postponed (a string, under `from __future__ import
    annotations`); [] for any other annotation."""
    if isinstance(annotation, str):
        return _postponed_literal(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    return []


def _postponed_literal(text: str) -> list[Any]:
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return []
    if not (isinstance(node, ast.Subscript) and getattr(node.value, "attr", getattr(node.value, "id", None))
            == "Literal"):
        return []
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    values = [item.value for item in items if isinstance(item, ast.Constant)]
    return values if len(values) == len(items) else []
