"""The values a parameter's annotation declares (`flag: bool`, `mode: Literal["fast", "exact"]`, an Enum class), read
from the evaluated annotation or from its postponed string (`from __future__ import annotations`)."""

from __future__ import annotations

import ast
import enum
import inspect
import re
import typing
from typing import Any


def declared_values(param: inspect.Parameter) -> list[Any]:
    """The values a static's annotation declares, in the order tried: `flag: bool` True then False (the flag set
    usually runs more of the rule), an Enum class's members and a `Literal[...]`'s values as listed; [] for any
    other annotation (an Enum named in a postponed annotation is not resolved). Each is in
    the parameter's contract, so a static without a default or a caller's literal takes the first (inferred
    inputs: a finding on them is at most a warning)."""
    if param.annotation in (bool, "bool", "builtins.bool"):
        return [True, False]
    if isinstance(param.annotation, type) and issubclass(param.annotation, enum.Enum):
        return list(param.annotation)  # `fft_type: FftType`: each member, in definition order
    if flags := _bool_tuple_length(param.annotation):  # `periodic: tuple[bool, bool]`: all set, then none
        return [(True,) * flags, (False,) * flags]
    return literal_values(param.annotation)


def _bool_tuple_length(annotation: Any) -> int:
    """K for a fixed-length tuple of bools, `tuple[bool, bool]` (evaluated, or postponed as text), else 0."""
    if isinstance(annotation, str):
        found = re.fullmatch(r"\s*(?:typing\.)?[Tt]uple\[\s*bool\s*(?:,\s*bool\s*)*\]\s*", annotation)
        return annotation.count("bool") if found else 0
    args = typing.get_args(annotation)
    return len(args) if typing.get_origin(annotation) is tuple and args and all(a is bool for a in args) else 0


def admits_none(param: inspect.Parameter) -> bool:
    """Whether None is in the parameter's declared values: no annotation, or one naming None, Optional or Any
    (`scale: float` admits none: a caller passing its own `None` default on resolves it first)."""
    from .._harness.source import annotation_text

    text = annotation_text(param.annotation)
    return not text or any(word in text for word in ("None", "Optional", "Any"))


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
