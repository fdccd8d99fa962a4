"""Parameters a target leaves without a default but whose callers in its own module always fill from a default of
their own: such a parameter is an option, not an input, and inference keeps it static at that default.

equinox's pattern: the public `backward_nan(x, name=None, terminate=True)` only forwards to the rule
`_backward_nan(x, name, terminate)`, whose own signature says nothing of `name` being a string or `terminate` a
bool. Drawing `f32[3]` for them checks the rule at inputs no program can give it (its bwd then fails on
`if terminate:`). The module's source is read, never run: a same-module function that calls the target by name and
passes one of its own parameters straight through (positionally or as `name=name`) lends that parameter's default,
when the default is an option value (None, a bool, a string, an enum member, a type or a callable), never a number
that might stand for an array.
"""

from __future__ import annotations

import ast
import enum
import inspect
import sys
import textwrap
from typing import Any

from . import _locate


def passthrough_defaults(fn: Any, attr: str, names: list[str]) -> dict[int, Any]:
    """{position: default} for the positional parameters `names` of the module attribute `attr` (the target `fn`)
    that a same-module caller fills from an option-valued default of its own. Positions two callers fill with
    different defaults are left out: no single value stands for them."""
    module = sys.modules.get(getattr(_locate.unwrap(fn), "__module__", "") or "")
    tree = _module_tree(module)
    if tree is None or not attr.isidentifier():
        return {}
    found: dict[int, Any] = {}
    conflicting: set[int] = set()
    for caller in (node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))):
        defaults = _option_defaults(getattr(module, caller.name, None))
        if not defaults:
            continue
        for call in (n for n in ast.walk(caller) if isinstance(n, ast.Call) and _calls(n, attr)):
            for position, value in _forwarded(call, names, defaults).items():
                if position in found and found[position] is not value and found[position] != value:
                    conflicting.add(position)
                found.setdefault(position, value)
    return {i: v for i, v in found.items() if i not in conflicting}


def _module_tree(module: Any) -> ast.Module | None:
    if module is None:
        return None
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(module)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return None


def _option_defaults(caller: Any) -> dict[str, Any]:
    """The caller's parameters whose default is an option value, by name."""
    try:
        params = inspect.signature(_locate.unwrap(caller)).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not p.empty and _is_option(p.default)}


def _is_option(value: Any) -> bool:
    if value is None or isinstance(value, (bool, str, enum.Enum, type)):
        return True
    return callable(value) and not hasattr(value, "shape")


def _calls(call: ast.Call, attr: str) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == attr


def _forwarded(call: ast.Call, names: list[str], defaults: dict[str, Any]) -> dict[int, Any]:
    """Positions of the target that this call fills with one of the caller's option parameters, unchanged."""
    out: dict[int, Any] = {}
    if any(isinstance(a, ast.Starred) for a in call.args):
        return out
    for position, arg in enumerate(call.args):
        if position < len(names) and isinstance(arg, ast.Name) and arg.id in defaults:
            out[position] = defaults[arg.id]
    for keyword in call.keywords:
        if keyword.arg in names and isinstance(keyword.value, ast.Name) and keyword.value.id in defaults:
            out[names.index(keyword.arg)] = defaults[keyword.value.id]
    return out
