"""Operands that a thin public wrapper hands a primitive from its own parameters, and that every call of the wrapper
in the package builds from static configuration only (read, never run).

A primitive checked where its package calls it is checked at the nearest public function that binds it. When that
function is a thin wrapper (`def flm_to_ftm(flm, thetas, *, L, ...): return flm_to_ftm_p.bind(flm, thetas, ...)`),
its parameters say nothing of how the operands vary: its callers do. A transform that computes the polar sample
positions from its integer and string settings (`thetas = samples.thetas(L, sampling, nside)`) before calling the
wrapper never batches them and never differentiates them, and the primitive's rules may refuse both (a batching
rule raising for a batched `thetas`, a JVP rule ignoring its tangent). Checked as batched and differentiated, they
are findings on uses the package never makes.

An argument counts as configuration when every name it reads is a module-level name (a function, a module, a
constant), a parameter of the calling function annotated as an int, str or bool (optionally None), or a local name
every assignment of which is again configuration. Calls made inside the package's primitive rules (a transpose rule
calling the paired wrapper on its own operands) are the rules' own, as `_contract_tangents` skips them. Conservative:
a call that passes the argument through `*args` or `**kwargs`, an unannotated or array parameter, a name bound by
unpacking, a loop or a comprehension, or no call at all, leaves the operand as it was.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterable
from typing import Any

from .. import _compat

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# Annotations of a parameter that holds configuration, never an array: `int`, `Optional[str]`, `bool | None`.
_STATIC_TYPES = {"int", "str", "bool", "None", "Optional", "Union", "Literal", "typing"}
_MAX_DEPTH = 4  # local names followed through assignments, at most


def configured_operands(wrapper: Any, handed: frozenset[int], modules: list[Any]) -> frozenset[int]:
    """The operand positions among `handed` (bound unchanged from `wrapper`'s parameters) that every call of
    `wrapper` in `modules` passes a value built from static configuration; empty when any call does not, or none
    was read."""
    from .._harness.source import function_source

    found = function_source(wrapper)
    if found is None or not handed:
        return frozenset()
    parameters = _parameter_of_operand(found.node, handed)
    if not parameters:
        return frozenset()
    positions = _positions(found.node)
    calls = list(_calls_of(found.node.name, modules, _rule_names(modules)))
    if not calls:
        return frozenset()
    return frozenset(operand for operand, parameter in parameters.items()
                     if all(_configured(_argument(call, parameter, positions), chain) for chain, call in calls))


def _parameter_of_operand(node: ast.AST, handed: frozenset[int]) -> dict[int, str]:
    """{operand position: the wrapper's parameter it binds} for the handed operands, read from the wrapper's one
    `.bind(...)` call (two binds that disagree, or a `*args` before the operand, give nothing)."""
    from .._harness.source import own_nodes

    names = {a.arg for a in _arguments(node)}
    binds = [n for n in own_nodes(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
             and n.func.attr == "bind"]
    if len(binds) != 1:
        return {}
    out: dict[int, str] = {}
    for k, arg in enumerate(binds[0].args):
        if isinstance(arg, ast.Starred):
            break
        if k in handed and isinstance(arg, ast.Name) and arg.id in names:
            out[k] = arg.id
    return out


def _arguments(node: Any) -> list[ast.arg]:
    args = node.args
    return [*args.posonlyargs, *args.args, *args.kwonlyargs,
            *([args.vararg] if args.vararg else []), *([args.kwarg] if args.kwarg else [])]


def _positions(node: Any) -> list[str]:
    return [a.arg for a in [*node.args.posonlyargs, *node.args.args]]


def _rule_names(modules: list[Any]) -> set[str]:
    """Names of the functions registered as rules of the package's primitives (their calls are the rules' own)."""
    names: set[str] = set()
    for module in modules:
        for value in list(vars(module).values()):
            if _compat.is_primitive(value) and not _compat.is_builtin_primitive(value):
                names |= {getattr(r, "__name__", "") for r in _compat.registered_rules(value).values() if r}
    return names


def _calls_of(name: str, modules: list[Any], rules: set[str]) -> Iterable[tuple[list[Any], ast.Call]]:
    """(enclosing functions, innermost first, call) for every call of `name` in the modules, outside the rules."""
    from .._harness.source import module_tree
    from .._loading._passthrough import calls_named

    for module in modules:
        tree = module_tree(module)
        if tree is None:
            continue
        calls = calls_named(tree, name)
        if not calls:
            continue
        enclosing = _enclosing(tree)
        for call in calls:
            chain = enclosing.get(id(call), [])
            if any(getattr(fn, "name", None) in rules | {name} for fn in chain):
                continue
            yield chain, call


_ENCLOSING: weakref.WeakKeyDictionary[ast.Module, dict[int, list[Any]]] = weakref.WeakKeyDictionary()


def _enclosing(tree: ast.Module) -> dict[int, list[Any]]:
    """id(call) -> the functions enclosing it, innermost first (walked once per parsed tree: every wrapper of a
    package asks of the same modules)."""
    if tree not in _ENCLOSING:
        _ENCLOSING[tree] = _walk_enclosing(tree)
    return _ENCLOSING[tree]


def _walk_enclosing(tree: ast.Module) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    stack: list[tuple[ast.AST, list[Any]]] = [(tree, [])]
    while stack:
        node, chain = stack.pop()
        for child in ast.iter_child_nodes(node):
            inner = [child, *chain] if isinstance(child, _FUNCTIONS) else chain
            if isinstance(child, ast.Call):
                out[id(child)] = chain
            stack.append((child, inner))
    return out


def _argument(call: ast.Call, parameter: str, positions: list[str]) -> ast.expr | None:
    """The expression `call` passes for `parameter`; None when it cannot be told (a `*args` or `**kwargs` first)."""
    for kw in call.keywords:
        if kw.arg == parameter:
            return kw.value
    if any(kw.arg is None for kw in call.keywords):
        return None
    index = positions.index(parameter) if parameter in positions else -1
    for k, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if k == index:
            return arg
    return None  # left to its default: read as not told (a default may be an array)


def _configured(expr: ast.expr | None, chain: list[Any], depth: int = 0) -> bool:
    """Whether every name `expr` reads is module-level, a configuration parameter, or a configured local."""
    if expr is None or depth > _MAX_DEPTH:
        return False
    for node in ast.walk(expr):
        if isinstance(node, _FUNCTIONS) or isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp,
                                                             ast.GeneratorExp, ast.NamedExpr)):
            return False
        if isinstance(node, ast.Name) and not _configured_name(node.id, chain, depth):
            return False
    return True


def _configured_name(name: str, chain: list[Any], depth: int) -> bool:
    for k, fn in enumerate(chain):
        parameter = next((a for a in _arguments(fn) if a.arg == name), None)
        if parameter is not None:
            return _static_annotation(parameter.annotation)
        values = _assignments(fn, name)
        if values is None:
            return False
        if values:
            return all(_configured(v, chain[k:], depth + 1) for v in values)
    return True  # a module-level name: a function, a module or a constant


def _assignments(fn: Any, name: str) -> list[ast.expr] | None:
    """The values plain assignments in `fn` give `name` ([] when `fn` never binds it); None when `fn` binds it any
    other way (`_harness.source.plain_assignments`), an import included."""
    from .._harness.source import plain_assignments

    if isinstance(fn, ast.Lambda):
        return []
    if any(isinstance(node, (ast.Import, ast.ImportFrom)) and any((a.asname or a.name).split(".")[0] == name
                                                                  for a in node.names) for node in ast.walk(fn)):
        return None
    return plain_assignments(fn, name)


def _static_annotation(annotation: ast.expr | None) -> bool:
    """An int, str or bool annotation, optionally with None (`Optional[int]`, `int | None`, `Literal["mw"]`)."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # a quoted annotation
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id not in _STATIC_TYPES:
            return False
        if isinstance(node, ast.Attribute) and node.attr not in _STATIC_TYPES:
            return False
    return True
