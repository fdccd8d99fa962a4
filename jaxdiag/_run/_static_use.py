"""What a static argument with no value anywhere is, read from how the code uses it.

A static position (nondiff_argnums, static_argnums) cannot be drawn as an array, and when neither a default, an
option, a caller's literal nor an annotation gives it a value, inference used to stop there. The code often says
more: `(x / 2) ** -nu`, `gamma(nu + 1)`, `jnp.asarray(s)` or `s < larges` treat it as a number, `range(p)` or
`num_segments=ny * nx` as an int, `if use_erf:` as a flag, and a numpydoc entry `v : float` (or Google's
`v (float): ...`) states it. A static handed on to another function of the package (`spread(i, nx, n_spread)`) is
read there too, two calls deep. Such a position takes the number inference gives any float static
(`_static_values.FLOAT_STATIC`), climbs the int ladder, or is True then False. The read is conservative: one use as
a string (`mode == "fast"`, `name + "_suffix"`), as a callable or as an object (`cfg.size`) and the position stays
unknown, so a configuration object or a mode is still asked of the user.
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
# keywords that take a count or a shape (`num_segments=`, `size=`, `length=`, `shape=`)
_SIZE_KEYWORD = re.compile(r"(^|_)(segments|size|length|shape|num|count)$")
_DOC_INT = re.compile(r"^\s*(int|integer)\b", re.IGNORECASE)


def numeric_statics(subject: Subject, positions: Iterable[int], params: list[inspect.Parameter]
                    ) -> dict[int, str]:
    """{position: "int", "float" or "bool"} for the static `positions` (of `params`, the signature users call) that
    the target's code or documentation treats as a number or a flag; others are left out."""
    out: dict[int, str] = {}
    uses = [_uses(node, namespace, _CALLEE_DEPTH) for node, namespace in _sources(subject)]
    doc = _documented_types(subject, [p.name for p in params])
    for i in positions:
        if i >= len(params):
            continue
        name = params[i].name
        kinds = {kind for found in uses for kind in found.get(name, ())}
        stated = doc.get(name)
        if "other" in kinds or not (kinds or stated):
            continue
        if kinds == {"bool"}:
            out[i] = "bool"
        else:
            out[i] = "int" if "int" in kinds or (stated and _DOC_INT.match(stated)) else "float"
    return out


# How far a static handed on to the package's own functions is followed (`spread(i, nx, n_spread)`).
_CALLEE_DEPTH = 2


def _sources(subject: Subject) -> list[tuple[ast.AST, dict[str, Any]]]:
    """The parsed definitions of the target's own functions and of its custom rules that name their statics as the
    primal does (a JVP rule takes the nondiff arguments first, under the same names in practice), each with the
    namespace its calls resolve in."""
    from ._stated_shapes import own_functions

    obj = subject.original if subject.original is not None else subject.obj
    fns = own_functions(subject) + [getattr(obj, attr, None) for attr in ("jvp", "fwd", "bwd")]
    return [found for fn in fns if callable(fn) and (found := _parsed(fn)) is not None]


def _parsed(fn: Any) -> tuple[ast.AST, dict[str, Any]] | None:
    from .._core import _locate
    from .._harness.source import function_source

    if not _locate.is_user_code(fn):
        return None
    found = function_source(fn)
    return (found.node, getattr(_locate.unwrap(fn), "__globals__", {})) if found is not None else None


def _uses(node: ast.AST, namespace: dict[str, Any], depth: int) -> dict[str, set[str]]:
    """{name: the kinds of use seen} for the function `node`'s parameters: "int" (`range(n)`, a size keyword),
    "number" (arithmetic, a numerical call, an ordering comparison), "bool" (a truth value) or "other" (a string, a
    call, an attribute); a parameter handed on to another function of the package gets that function's uses of it
    (`depth` calls deep)."""
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
        elif isinstance(sub, ast.UnaryOp):
            seen(sub.operand, "bool" if isinstance(sub.op, ast.Not) else "number")
        elif isinstance(sub, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            seen(sub.test, "bool")
        elif isinstance(sub, ast.BoolOp):
            for value in sub.values:
                seen(value, "bool")
        elif isinstance(sub, ast.Compare):
            _compared(sub, seen)
        elif isinstance(sub, ast.Call):
            _called(sub, seen)
            if depth > 0:
                _handed_on(sub, names, namespace, depth, out)
        elif isinstance(sub, ast.Attribute):  # `s.dtype` after `s = jnp.asarray(s)`; `cfg.mode`: an object
            seen(sub.value, "number" if sub.attr in _ARRAY_ATTRIBUTES else "other")
    return out


def _handed_on(call: ast.Call, names: set[str], namespace: dict[str, Any], depth: int,
               out: dict[str, set[str]]) -> None:
    """The uses of the parameters `call` hands to a function of the package (by position or by keyword)."""
    if not isinstance(call.func, ast.Name):
        return
    parsed = _parsed(namespace.get(call.func.id))
    callee, callee_namespace = parsed if parsed is not None else (None, {})
    if not isinstance(callee, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return
    from .._harness.source import handed_names

    handed = handed_names(call, [a.arg for a in callee.args.posonlyargs + callee.args.args], names)
    if not handed:
        return
    uses = _uses(callee, callee_namespace, depth - 1)
    for inner, outer in handed.items():
        out.setdefault(outer, set()).update(uses.get(inner, ()))


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
    for kw in node.keywords:  # `num_segments=ny * nx`, `size=n`: a count
        if kw.arg is not None and _SIZE_KEYWORD.search(kw.arg):
            for sub in ast.walk(kw.value):
                seen(sub, "int")
    if name in ("range", "reshape", "zeros", "ones", "empty", "full", "arange", "eye"):
        for arg in node.args[:1] if name in ("zeros", "ones", "empty", "full") else node.args:
            for sub in ast.walk(arg):  # range(p + 1), jnp.zeros((ny, nx))
                seen(sub, "int")
        return
    namespace = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else None
    if name in _NUMBER_CALLS or namespace in _NUMERIC_MODULES:
        for arg in node.args:
            seen(arg, "number")


def _documented_types(subject: Subject, names: list[str]) -> dict[str, str]:
    """{parameter: the type its docstring entry states} (numpydoc `v : float`, Google `v (float): ...`)."""
    return {name: text for name, text in documented_entries(subject, names).items() if _DOC_NUMBER.match(text)}


def documented_entries(subject: Subject, names: list[str]) -> dict[str, str]:
    """{parameter: the first line of its docstring entry} (numpydoc `v : float`, Google `v (float): ...` and
    `v: text`)."""
    obj = subject.original if subject.original is not None else subject.obj
    doc = inspect.getdoc(obj) or ""
    out: dict[str, str] = {}
    # a NumPy ufunc's signature names its inputs x1, x2, ...: its docstring's entries, in order, are those inputs
    listed = re.findall(r"^(\w+)\s*:\s*\S", doc.partition("Parameters\n----------\n")[2].partition("\n\n\n")[0]
                        or "", re.MULTILINE)
    for k, name in enumerate(names):
        documented = listed[k] if re.fullmatch(r"x\d+", name) and k < len(listed) else name
        found = re.search(rf"^\s*{re.escape(documented)}\s*(?:\(([^)]*)\)\s*:|:(?!:)\s*([^\n]*))", doc,
                          re.MULTILINE)
        if found is not None:
            out[name] = found.group(1) or found.group(2) or ""
    return out


# A docstring entry that describes integer indices: "the row indices of A", "[n_nz; int32]", "indices (int)".
# ("index" alone is not: a refractive index is a float)
_DOC_INDICES = re.compile(r"\b(indices|u?int(8|16|32|64)|integers?)\b", re.IGNORECASE)


def documented_indices(subject: Subject, names: list[str]) -> set[int]:
    """Positions whose docstring entry says they hold integers or indices (`Ai: [n_nz; int32]: the row indices of
    the sparse matrix A`): drawn as in-range integers, like operands named as indices."""
    entries = documented_entries(subject, names)
    return {i for i, name in enumerate(names) if name in entries and _DOC_INDICES.search(entries[name])}


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


# JAX's collectives and where each takes its axis name: (positional index, keyword)
_COLLECTIVES = {**dict.fromkeys(("psum", "pmax", "pmin", "pmean", "all_gather", "ppermute", "psum_scatter",
                                 "all_to_all", "pbroadcast", "pshuffle", "pswapaxes"), (1, "axis_name")),
                **dict.fromkeys(("axis_index", "axis_size"), (0, "axis_name"))}


def collective_axes(subject: Subject, names: list[str]) -> set[str]:
    """The parameters among `names` that the target's own code (its function, fwd, bwd or JVP rule) passes as the
    axis of a collective (`lax.psum(x, vocab_axis)`, `lax.axis_index(vocab_axis)`): mapped axes' names, whatever
    they are called, bound by a `shard_map` only."""
    found: set[str] = set()
    for node, _ in _sources(subject):
        for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name not in _COLLECTIVES:
                continue
            position, keyword = _COLLECTIVES[name]
            axis = call.args[position] if len(call.args) > position else next(
                (k.value for k in call.keywords if k.arg == keyword), None)
            if isinstance(axis, ast.Name) and axis.id in names:
                found.add(axis.id)
    return found
