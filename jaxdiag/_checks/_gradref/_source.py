"""Errors and source text for the grad checks: the user's frame of an exception, short error messages, rule
locations, and argument/output names read from the user's source.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import traceback
from typing import Any

import jax

from ... import _compat
from ..._core import _locate
from ..._core._report import Location
from ..._harness.source import called_name, function_source, own_nodes

# ---------------------------------------------------------------------------------------------------------------
# Errors and source text
# ---------------------------------------------------------------------------------------------------------------

def user_frame(exc: BaseException, prefer: Any = None) -> traceback.FrameSummary | None:
    """The deepest traceback frame in the user's code (in `prefer`'s file when it is there)."""
    frames: list[traceback.FrameSummary] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:  # JAX moves its filtered frames to the __cause__
        seen.add(id(exc))
        frames = list(traceback.extract_tb(exc.__traceback__)) + frames
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    loc = _locate.locate(prefer) if prefer is not None else None
    if loc is not None:
        target = os.path.abspath(loc.path)
        for fr in reversed(frames):
            if os.path.abspath(fr.filename) == target:
                return fr
    for fr in reversed(frames):
        if _locate.is_user_file(fr.filename):
            return fr
    return None


def error_text(exc: BaseException, prefer: Any = None, limit: int = 220) -> str:
    """`TypeError: unsupported operand ... (raised at samples/x.py:12: `dx = g * fn`)`."""
    first = short_message(exc, limit)
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    fr = user_frame(exc, prefer)
    if fr is not None:
        code = (fr.line or linecache.getline(fr.filename, fr.lineno or 0)).strip()
        where = f"{_locate.relative_path(fr.filename)}:{fr.lineno}"
        text += f" (raised at {where}" + (f": `{code}`)" if code else ")")
    return text


def short_message(exc: BaseException, limit: int = 300) -> str:
    """The first line of an exception's message, cut at a sentence end when it is long (JAX's are). A failed host
    callback is named by the error it raised, not by XLA's header (`_compat.callback_error_line`)."""
    first = _compat.callback_error_line(str(exc).strip().splitlines())
    if len(first) <= limit:
        return first
    cut = first.rfind(". ", 0, limit)
    return first[: cut + 1] if cut > 40 else first[: limit - 3] + "..."


def locate(fn: Any) -> Location | None:
    return _locate.locate(fn) if fn is not None else None


def rule_name(fn: Any, default: str) -> str:
    fn = _locate.unwrap(fn) if fn is not None else None
    name = getattr(fn, "__name__", None)
    return name if name and name not in ("<lambda>", "_") else default  # `@f.defjvp def _(...)` names nothing


def function_ast(fn: Any) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The parsed `def` of a user function, or None (builtins, lambdas, no source); read once, by the harness."""
    found = function_source(fn)
    return found.node if found is not None else None


def return_values(fn: Any) -> list[ast.expr]:
    """The expressions of the `return` statements of `fn` itself (nested functions excluded)."""
    found = function_source(fn)
    if found is None:
        return []
    return [r.value for r in own_nodes(found.node) if isinstance(r, ast.Return) and r.value is not None]


def source_of(node: ast.AST) -> str:
    return ast.unparse(node)


def _star_args_names(fn: Any, star: str, count: int) -> list[str] | None:
    """`x, y = args` at the top of a `def f(*args)` body names the elements of `*args`."""
    node = function_ast(fn)
    if node is None:
        return None
    for stmt in node.body[:5]:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.value, ast.Name)
                and stmt.value.id == star and isinstance(stmt.targets[0], (ast.Tuple, ast.List))):
            names = [e.id for e in stmt.targets[0].elts if isinstance(e, ast.Name)]
            if len(names) == len(stmt.targets[0].elts) == count:
                return names
    return None


def argument_names(fn: Any, count: int) -> list[str]:
    """Readable names of the first `count` positional parameters of `fn` (`args[0]` for `*args` ones)."""
    leaf_names = getattr(fn, "__jaxdiag_arg_names__", None)  # a flat view of pytree arguments (_layout)
    if leaf_names is not None and len(leaf_names) >= count:
        return list(leaf_names[:count])
    bound = inspect.ismethod(fn)  # a bound method's signature has no `self`; its function's has
    # a wrapper stating its own parameters (a function with jaxdiag's stand-ins filled in takes the others only)
    stated = isinstance(getattr(fn, "__dict__", None), dict) and "__signature__" in fn.__dict__
    fn = fn if stated else _locate.unwrap(fn)
    try:
        params = list(inspect.signature(fn).parameters.values())[1 if bound else 0:]
    except (TypeError, ValueError):
        return [f"argument {i}" for i in range(count)]
    names: list[str] = []
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            rest = count - len(names)
            names.extend(_star_args_names(fn, p.name, rest) or [f"{p.name}[{i}]" for i in range(rest)])
            break
    names.extend(f"argument {i}" for i in range(len(names), count))
    return names[:count]


def output_names(fn: Any, out: Any) -> list[str]:
    """One readable name per output leaf: the names in `return a, b` when the function returns a tuple of names,
    else `out_1`, `out_2`, ... (1-based, as users number outputs), `out` for a single array."""
    paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(out)[0]]
    if len(paths) == 1 and not paths[0]:
        return ["output"]
    names_by_index: dict[int, str] = {}
    if isinstance(out, (tuple, list)) and fn is not None:
        for value in return_values(fn)[-1:]:
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(out):
                names_by_index = {i: e.id for i, e in enumerate(value.elts) if isinstance(e, ast.Name)}
    names = []
    for path in paths:
        first, rest = (path[0], path[1:]) if path else (None, ())
        index = getattr(first, "idx", None)
        if isinstance(index, int):
            base = names_by_index.get(index, f"out_{index + 1}")
        else:
            base = "out" + jax.tree_util.keystr((first,)) if first is not None else "out"
        names.append(base + (jax.tree_util.keystr(tuple(rest)) if rest else ""))
    return names


# Operations with a derivative (or value) that is infinite at a finite point: only a rule that computes one of them can
# turn a zero into `0 * inf = NaN` at the edge of a domain.
_SINGULAR_CALLS = frozenset({"sqrt", "rsqrt", "cbrt", "log", "log1p", "log2", "log10", "reciprocal", "power", "pow",
                             "float_power", "arctanh", "atanh", "arcsin", "arccos", "asin", "acos", "xlogy", "xlog1py",
                             "lgamma", "digamma", "gammaln", "polygamma", "erfinv", "divide", "true_divide", "div",
                             "logit", "tan"})


def may_be_singular(fns: list[Any]) -> bool:
    """Some user rule divides, raises to a power, or calls an operation singular at a finite point; True also when a
    rule's source cannot be read (nothing rules it out)."""
    if not fns:
        return True
    for fn in fns:
        node = function_ast(fn)
        if node is None:
            return True
        for sub in ast.walk(node):
            if isinstance(sub, ast.BinOp) and isinstance(sub.op, (ast.Div, ast.Pow, ast.FloorDiv, ast.Mod)):
                return True
            if isinstance(sub, ast.Call):
                name = called_name(sub.func) or ""
                if name in _SINGULAR_CALLS:
                    return True
    return False
