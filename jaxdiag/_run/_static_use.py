"""What a static argument with no value anywhere is, read from how the code uses it.

A static position (nondiff_argnums, static_argnums) cannot be drawn as an array, and when neither a default, an
option, a caller's literal nor an annotation gives it a value, inference used to stop there. The code often says
more: `(x / 2) ** -nu`, `gamma(nu + 1)`, `jnp.asarray(s)` or `s < larges` treat it as a number, `range(p)` as an
int, and a numpydoc entry `v : float` (or Google's `v (float): ...`) states it. Such a position takes the number
inference gives any float static (`_static_values.FLOAT_STATIC`) or climbs the int ladder. The read is conservative:
one use as a string (`mode == "fast"`, `name + "_suffix"`), as a callable or as an object (`cfg.size`) and the
position stays unknown, so a configuration object or a mode is still asked of the user.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable
from typing import Any

from .._checks._base import Subject

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
# calls whose argument is a number: conversions, and any function of the numerical namespaces
_NUMBER_CALLS = {"float", "abs", "round"}
_NUMERIC_MODULES = {"jnp", "np", "numpy", "math", "lax", "jax"}
_ARRAY_ATTRIBUTES = {"dtype", "shape", "ndim", "size", "astype", "real", "imag", "T"}
_DOC_NUMBER = re.compile(r"^\s*(float|int|integer|scalar|number|real|array_like|array-like)\b", re.IGNORECASE)
_DOC_INT = re.compile(r"^\s*(int|integer)\b", re.IGNORECASE)


def numeric_statics(subject: Subject, positions: Iterable[int], params: list[inspect.Parameter]
                    ) -> dict[int, str]:
    """{position: "int" or "float"} for the static `positions` (of `params`, the signature users call) that the
    target's code or documentation treats as a number; others are left out."""
    out: dict[int, str] = {}
    uses = [_uses(source) for source in _sources(subject)]
    doc = _documented_types(subject, [p.name for p in params])
    for i in positions:
        if i >= len(params):
            continue
        name = params[i].name
        kinds = {kind for found in uses for kind in found.get(name, ())}
        stated = doc.get(name)
        if "other" in kinds or not (kinds or stated):
            continue
        out[i] = "int" if "int" in kinds or (stated and _DOC_INT.match(stated)) else "float"
    return out


def _sources(subject: Subject) -> list[Any]:
    """The parsed definitions of the target's own functions and of its custom rules that name their statics as the
    primal does (a JVP rule takes the nondiff arguments first, under the same names in practice)."""
    from .._harness.source import function_source
    from ._stated_shapes import own_functions

    obj = subject.original if subject.original is not None else subject.obj
    fns = own_functions(subject) + [getattr(obj, attr, None) for attr in ("jvp", "fwd", "bwd")]
    found = [function_source(fn) for fn in fns if callable(fn)]
    return [f.node for f in found if f is not None]


def _uses(node: ast.AST) -> dict[str, set[str]]:
    """{name: the kinds of use seen} for the function `node`'s parameters: "int" (`range(n)`), "number"
    (arithmetic, a numerical call, an ordering comparison) or "other" (a string, a call, an attribute)."""
    names = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)} if isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
    out: dict[str, set[str]] = {}

    def seen(expr: ast.AST, kind: str) -> None:
        if isinstance(expr, ast.Name) and expr.id in names:
            out.setdefault(expr.id, set()).add(kind)

    for sub in ast.walk(node):
        if isinstance(sub, ast.BinOp) and isinstance(sub.op, _ARITHMETIC):
            stringy = any(isinstance(s, ast.Constant) and isinstance(s.value, (str, bytes))
                          or isinstance(s, ast.JoinedStr) for s in (sub.left, sub.right))
            for side in (sub.left, sub.right):
                seen(side, "other" if stringy else "number")
        elif isinstance(sub, ast.UnaryOp) and isinstance(sub.op, (ast.USub, ast.UAdd)):
            seen(sub.operand, "number")
        elif isinstance(sub, ast.Compare):
            _compared(sub, seen)
        elif isinstance(sub, ast.Call):
            _called(sub, seen)
        elif isinstance(sub, ast.Attribute):  # `s.dtype` after `s = jnp.asarray(s)`; `cfg.mode`: an object
            seen(sub.value, "number" if sub.attr in _ARRAY_ATTRIBUTES else "other")
    return out


def _compared(node: ast.Compare, seen: Any) -> None:
    operands = [node.left, *node.comparators]
    stringy = any(isinstance(o, ast.Constant) and isinstance(o.value, (str, bytes)) for o in operands)
    ordering = any(isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops)
    numeric = any(isinstance(o, ast.Constant) and type(o.value) in (int, float) for o in operands)
    for operand in operands:
        if stringy:
            seen(operand, "other")
        elif ordering or numeric:
            seen(operand, "number")


def _called(node: ast.Call, seen: Any) -> None:
    from .._harness.source import called_name

    seen(node.func, "other")  # called: a function
    func = node.func
    name = called_name(func)
    if name == "range":
        for arg in node.args:
            seen(arg, "int")
            for sub in ast.walk(arg):  # range(p + 1)
                if isinstance(sub, ast.BinOp):
                    seen(sub.left, "int")
                    seen(sub.right, "int")
        return
    namespace = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
    if name in _NUMBER_CALLS or namespace in _NUMERIC_MODULES:
        for arg in node.args:
            seen(arg, "number")


def _documented_types(subject: Subject, names: list[str]) -> dict[str, str]:
    """{parameter: the type its docstring entry states} (numpydoc `v : float`, Google `v (float): ...`)."""
    obj = subject.original if subject.original is not None else subject.obj
    doc = inspect.getdoc(obj) or ""
    out: dict[str, str] = {}
    for name in names:
        found = re.search(rf"^\s*{re.escape(name)}\s*(?:\(([^)]*)\)\s*:|:(?!:)\s*([^\n]*))", doc, re.MULTILINE)
        if found is None:
            continue
        text = found.group(1) or found.group(2) or ""
        if _DOC_NUMBER.match(text):
            out[name] = text
    return out


def documented_value(subject: Subject, name: str, default: float) -> float:
    """A float inside the bounds the target's docstring states for `name` ("for real s > 1", "0 < p < 1",
    "nu >= 0"): `default` above a lower bound alone, below an upper one alone, the midpoint of both; `default`
    when none is stated."""
    obj = subject.original if subject.original is not None else subject.obj
    docs = [inspect.getdoc(fn) or "" for fn in (obj, getattr(obj, "fun", None)) if fn is not None]
    number = r"([-+]?\d+(?:\.\d*)?)"
    lower = upper = None
    for doc in docs:
        for found in re.finditer(rf"(?:{number}\s*(<=?|≤)\s*)?\b{re.escape(name)}\s*(>=?|<=?|≥|≤)\s*{number}", doc):
            if found.group(1) is not None:
                lower = float(found.group(1))
            bound, relation = float(found.group(4)), found.group(3)
            if relation in (">", ">=", "≥"):
                lower = bound
            else:
                upper = bound
    if lower is not None and upper is not None:
        return (lower + upper) / 2 if lower < upper else default
    if lower is not None:
        return lower + abs(default)
    if upper is not None:
        return upper - abs(default)
    return default
