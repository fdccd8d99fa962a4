"""Operands the package's own calls always pass complex (read, never run).

A transform written for complex data (a distributed FFT's custom_vjp, whose backward pass runs the inverse
transform) is called by its package only after a conversion: `arr = lax.convert_element_type(arr,
to_complex_dtype(...))`, `x.astype(jnp.complex64)`, `jnp.fft.fft(x)`, `1j * x`. Its function body names no complex
dtype, so inference draws real data, where it still runs (JAX promotes), and its backward pass then returns a
complex cotangent for a real input: a finding on an input the package never passes. Where every call of the target
in its package passes a complex value for an operand, that operand is drawn complex first (`_climb`).

The calls are those of every module of the target's top-level package that holds it under some name (an import
alias included), outside the target's own rules. A call argument counts as complex when it is such a conversion, or
a local name whose last plain assignment before the call, in the function making it, is one (a conversion in one
branch of a `match` whose other branches raise). Anything else (a parameter passed on, an unread default, `*args`)
counts as not complex, and one such call is enough to draw as before.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
from typing import Any

from .._checks._base import Subject
from .._core import _locate

# A conversion whose text names a complex dtype, and transforms that return complex data whatever they are given.
_CONVERSIONS = {"astype", "convert_element_type", "asarray", "array", "complex64", "complex128", "csingle",
                "cdouble", "complex"}
_COMPLEX_RESULT = re.compile(r"^i?r?fft(2|n)?$|^hfft$")
_COMPLEX_NAME = re.compile(r"complex|(?<![A-Za-z0-9])c(single|double|64|128)(?![A-Za-z0-9])")


def complex_positions(subject: Subject) -> frozenset[int]:
    """The positions of the target's parameters that every call of it in its package passes a complex value; empty
    for a primitive (its operands come from its binding calls) or when no call was read."""
    from .._harness.source import module_tree
    from .._loading._passthrough import calls_named
    from ._configured_operands import _argument, _enclosing

    if subject.kind not in ("custom_jvp", "custom_vjp", "function"):
        return frozenset()
    obj = subject.original if subject.original is not None else subject.obj
    fn = getattr(obj, "fun", None) or obj
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return frozenset()
    own = {getattr(_locate.unwrap(r), "__name__", "") for r in (getattr(obj, a, None) for a in ("fwd", "bwd", "jvp"))
           if r is not None} - {""}
    complex_calls: list[set[int]] = []
    for module in _package_modules(getattr(_locate.unwrap(fn), "__module__", "") or ""):
        aliases = [name for name, value in list(vars(module).items()) if value is obj]
        tree = module_tree(module) if aliases else None
        if tree is None:
            continue
        for alias in aliases:
            for call in calls_named(tree, alias):
                chain = _enclosing(tree).get(id(call), [])
                if any(getattr(f, "name", None) in own | {alias} for f in chain):
                    continue  # the target's own rules calling it, or it calling itself
                complex_calls.append({i for i, p in enumerate(params)
                                      if _complex(_argument(call, p, params), chain, call.lineno)})
    return frozenset(set.intersection(*complex_calls)) if complex_calls else frozenset()


def _package_modules(module_name: str) -> list[Any]:
    """The loaded modules of the package `module_name` belongs to, in name order (deterministic)."""
    top = module_name.partition(".")[0]
    if not top:
        return []
    names = sorted(n for n in list(sys.modules) if n == top or n.startswith(top + "."))
    return [sys.modules[n] for n in names if sys.modules.get(n) is not None]


def _complex(expr: ast.expr | None, chain: list[Any], line: int, depth: int = 0) -> bool:
    if expr is None or depth > 3:
        return False
    if isinstance(expr, ast.BinOp):
        return any(isinstance(side, ast.Constant) and isinstance(side.value, complex)
                   for side in (expr.left, expr.right))
    if isinstance(expr, ast.Call):
        func = expr.func
        called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return bool(_COMPLEX_RESULT.match(called)) or (
            called in _CONVERSIONS and bool(_COMPLEX_NAME.search(ast.unparse(expr))))
    if isinstance(expr, ast.Name) and chain:
        return _last_assignment_complex(expr.id, chain, line, depth)
    return False


def _last_assignment_complex(name: str, chain: list[Any], line: int, depth: int) -> bool:
    """Whether the last plain assignment of `name` before `line` in the innermost function making the call is a
    complex value."""
    assigned = [node for node in ast.walk(chain[0]) if isinstance(node, (ast.Assign, ast.AnnAssign))
                and node.lineno < line and node.value is not None and any(
                    isinstance(t, ast.Name) and t.id == name
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    if not assigned:
        return False
    last = max(assigned, key=lambda node: node.lineno)
    return _complex(last.value, chain, last.lineno, depth + 1)
