"""How a primitive is reached by differentiation: a primitive whose every `bind` in its module sits inside a
custom_vjp / custom_jvp function (its primal, fwd, bwd or JVP rule, or a helper only they call) is never
differentiated by JAX itself, so it needs no JVP rule. FFI kernels are typically written this way."""

from __future__ import annotations

import ast
from types import ModuleType
from typing import Any

from ... import _compat
from ..._core import _locate
from ..._core._errors import TargetLoadError
from ..._harness.source import module_tree
from ..._loading import _targets  # a module reference: _targets imports the checks package while it loads


def custom_derivative_wrappers(prim: Any, module: ModuleType | None) -> list[str]:
    """The custom_vjp/custom_jvp functions of `module` through which every `bind` of `prim` in it is reached, or
    [] when some bind is reachable otherwise (or there is none, or the source cannot be read)."""
    if module is None:
        return []
    covered, wrappers = _custom_pieces(module)
    reached = _reached_only_through(prim, module, covered)
    return sorted({wrappers[n] for n in reached}) if reached else []


def jit_wrappers(prim: Any, module: ModuleType | None) -> list[str]:
    """The `jax.jit`-wrapped functions of `module` through which every `bind` of `prim` in it is reached (so the
    module's code binds it only while jit traces, and its impl never runs eagerly there), or [] otherwise."""
    if module is None:
        return []
    covered = {getattr(_locate.unwrap(v), "__name__", "") for v in vars(module).values() if _compat.is_jit_wrapped(v)}
    return sorted(_reached_only_through(prim, module, covered - {""}) or ())


def _reached_only_through(prim: Any, module: ModuleType, covered: set[str]) -> set[str] | None:
    """The names in `covered` through which every function of `module` that binds `prim` is reached (a binder is
    in `covered`, or every function that calls it is, recursively), or None when some bind is reachable otherwise
    (a module-level bind, an uncovered caller-less binder), there is no bind, or the source cannot be read."""
    names = {n for n, v in vars(module).items() if v is prim}
    tree = module_tree(module)
    if tree is None or not names or not covered:
        return None
    functions = {node.name: node for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    binders = {name for name, node in functions.items() if _binds(node, names)}
    if not binders or _binds_at_module_level(tree, names):
        return None
    callers = {name: {c for c, node in functions.items() if c != name and _calls(node, name)} for name in functions}
    reached: set[str] = set()

    def only_covered(name: str, seen: frozenset[str]) -> bool:
        if name in covered:
            reached.add(name)
            return True
        who = callers.get(name, set()) - seen
        return bool(who) and all(only_covered(c, seen | {name}) for c in who)

    return reached if all(only_covered(b, frozenset()) for b in binders) else None


def _custom_pieces(module: ModuleType) -> tuple[set[str], dict[str, str]]:
    """Function names that are custom_vjp/custom_jvp pieces (primal, fwd, bwd, JVP rule), each mapped to the name
    of the custom function they belong to."""
    owner: dict[str, str] = {}
    for value in vars(module).values():
        try:
            kind, _ = _targets.classify(value)
        except TargetLoadError:  # a module-level value that is no checkable target (a constant, a class)
            continue
        if kind == "custom_vjp":
            fun, fwd, bwd, _, _ = _compat.custom_vjp_parts(value)
            parts = [fun, fwd, bwd]
        elif kind == "custom_jvp":
            fun, jvp, _, _ = _compat.custom_jvp_parts(value)
            parts = [fun, jvp]
        else:
            continue
        name = getattr(_locate.unwrap(fun), "__name__", "?")
        for part in parts:
            part_name = getattr(_locate.unwrap(part), "__name__", None) if part is not None else None
            if part_name:
                owner[part_name] = name
    return set(owner), owner


def _binds(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "bind" and isinstance(n.value, ast.Name)
               and n.value.id in names for n in ast.walk(node))


def _binds_at_module_level(tree: ast.Module, names: set[str]) -> bool:
    return any(_binds(stmt, names) for stmt in tree.body
               if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


def _calls(node: ast.AST, name: str) -> bool:
    """`name` appears in `node` as a called or passed name (a helper called directly or handed to jax.vmap)."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))
