"""Parameters a target leaves without a default but whose callers in its own module always fill from a default of
their own: such a parameter is an option, not an input, and inference keeps it static at that default.

equinox's pattern: the public `backward_nan(x, name=None, terminate=True)` only forwards to the rule
`_backward_nan(x, name, terminate)`, whose own signature says nothing of `name` being a string or `terminate` a
bool. Drawing `f32[3]` for them checks the rule at inputs no program can give it (its bwd then fails on
`if terminate:`). The module's source is read, never run: a same-module function that calls the target by name and
passes one of its own parameters straight through (positionally or as `name=name`) lends that parameter's default,
when the default is an option value (None, a bool, a string, an enum member, a type or a callable), never a number
that might stand for an array.

The same reading gives a primitive's bind params (`bind_site_params`): the keyword arguments the package's own
`prim.bind(x, order=order)` calls pass, resolved to literals without running anything.
"""

from __future__ import annotations

import ast
import enum
import inspect
import sys
import textwrap
import weakref
from typing import Any

from .._core import _locate
from .._harness.source import module_tree


def passthrough_defaults(fn: Any, attr: str, names: list[str]) -> dict[int, Any]:
    """{position: default} for the positional parameters `names` of the module attribute `attr` (the target `fn`)
    that a same-module caller fills from an option-valued default of its own. Positions two callers fill with
    different defaults are left out: no single value stands for them."""
    module = sys.modules.get(getattr(_locate.unwrap(fn), "__module__", "") or "")
    tree = module_tree(module)
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


# ---------------------------------------------------------------------------------------------------------------
# Bind params from the library's own call sites
# ---------------------------------------------------------------------------------------------------------------


def bind_site_params(names: set[str], modules: list[Any], wanted: set[str] | None,
                     origins: dict[str, str] | None = None, operands: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The bind params the modules' own code passes a primitive held under one of `names`: keyword arguments of
    `NAME.bind(...)` (or of a call of the object holding it, `NAME(...)`, which forwards them), restricted to
    `wanted` (None: any keyword), read from the source (never run). A value is a literal, a module-level literal
    constant, or the literal default of the enclosing function's own parameter; a parameter of the enclosing
    function with no such value is followed to the calls of that function in the modules (`_from_callers`: a
    literal they pass, or their own parameter's default, up to `FOLLOW_DEPTH` calls up). The call site giving the
    most of `wanted` wins (the first of equals): every call site is a call the library really makes. `origins`
    (when given) receives, for each value found by following callers, where it was read. A keyword naming one of
    `operands` (the impl's positional operands, `spin=` of a public wrapper named as the primitive) is the
    wrapper's own argument, never a bind param."""
    best: dict[str, Any] = {}
    best_origins: dict[str, str] = {}
    index = _CallIndex(modules)
    for _module, tree, constants in index.trees:
        for caller, call in _calls_in(tree):
            if not _binds(call, names):
                continue
            found: dict[str, Any] = {}
            followed: dict[str, str] = {}
            defaults = _literal_defaults(caller)
            rebound = _rebound(caller)
            for keyword in call.keywords:
                if keyword.arg is None or keyword.arg in operands or (wanted is not None and keyword.arg not in wanted):
                    continue
                value = _static_value(keyword.value, constants, defaults, rebound)
                if value is _UNKNOWN:
                    value, where = index.from_callers(caller, keyword.value, 1)
                    if value is not _UNKNOWN:
                        followed[keyword.arg] = where
                if value is not _UNKNOWN:
                    found[keyword.arg] = value
            if len(found) > len(best):
                best, best_origins = found, followed
            if wanted is not None and wanted <= set(best):
                break
        else:
            continue
        break
    if origins is not None:
        origins.update(best_origins)
    return best


# Calls followed up from a bind site to the literal a caller passes, at most.
FOLLOW_DEPTH = 3


class _CallIndex:
    """The modules' parsed sources with their literal constants, and the calls of each function name in them."""

    def __init__(self, modules: list[Any]):
        self.trees: list[tuple[Any, ast.Module, dict[str, Any]]] = []
        for module in modules:
            tree = module_tree(module)
            if tree is not None:
                self.trees.append((module, tree, _literal_constants(tree)))
        self._calls: dict[str, list[tuple[Any, Any, ast.Call, dict[str, Any]]]] = {}

    def calls_of(self, name: str) -> list[tuple[Any, Any, ast.Call, dict[str, Any]]]:
        """(module, enclosing function, call, the module's constants) for every call `name(...)`/`x.name(...)`."""
        if name not in self._calls:
            self._calls[name] = [(module, caller, call, constants) for module, tree, constants in self.trees
                                 for caller, call in _calls_by_name(tree).get(name, ())]
        return self._calls[name]

    def from_callers(self, function: Any, node: ast.expr, depth: int) -> tuple[Any, str]:
        """(value, where it was read) for `node`, a parameter of `function` with no literal of its own: the first
        call of `function` in the modules that passes a literal for it (positionally or by keyword), or passes a
        parameter of its own with a literal default (followed further up, at most FOLLOW_DEPTH calls)."""
        if depth > FOLLOW_DEPTH or not isinstance(node, ast.Name) \
                or not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return _UNKNOWN, ""
        args = function.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        keyword_only = [a.arg for a in args.kwonlyargs]
        if node.id not in positional + keyword_only:
            return _UNKNOWN, ""
        for module, caller, call, constants in self.calls_of(function.name):
            if caller is function or any(isinstance(a, ast.Starred) for a in call.args):
                continue
            passed: ast.expr | None = next((k.value for k in call.keywords if k.arg == node.id), None)
            if passed is None and node.id in positional:
                skip = 1 if positional[:1] in (["self"], ["cls"]) and isinstance(call.func, ast.Attribute) else 0
                position = positional.index(node.id) - skip
                if 0 <= position < len(call.args):
                    passed = call.args[position]
            if passed is None:
                continue
            defaults = _literal_defaults(caller)
            value = _static_value(passed, constants, defaults, _rebound(caller))
            where = f"{module.__name__} line {call.lineno}, where {_name_of(caller)} calls {function.name}"
            if isinstance(passed, ast.Name) and passed.id in defaults:
                where = f"the default of `{passed.id}` in {module.__name__}:{_name_of(caller)}, which calls " \
                        f"{function.name}"
            if value is _UNKNOWN:
                value, where = self.from_callers(caller, passed, depth + 1)
            if value is not _UNKNOWN:
                return value, where
        return _UNKNOWN, ""


def _name_of(function: Any) -> str:
    return getattr(function, "name", None) or "module level"


def bind_site_annotations(names: set[str], modules: list[Any], wanted: set[str]) -> dict[str, str]:
    """For the bind params `wanted`: the annotation (as source text) of the enclosing function's parameter that a
    `NAME.bind(..., name=param)` call passes (`def forward(x, L: int)` -> {"L": "int"}), the first one found."""
    out: dict[str, str] = {}
    for module in modules:
        tree = module_tree(module)
        for caller, call in _calls_in(tree) if tree is not None else ():
            if not _binds(call, names) or not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            args = caller.args
            annotations = {a.arg: a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs
                           if a.annotation is not None}
            for keyword in call.keywords:
                if keyword.arg in wanted and keyword.arg not in out and isinstance(keyword.value, ast.Name) \
                        and keyword.value.id in annotations:
                    out[keyword.arg] = ast.unparse(annotations[keyword.value.id])
    return out


def bind_site_arities(names: set[str], modules: list[Any], wanted: set[str]) -> dict[str, int]:
    """For the bind params `wanted` that take a tuple: how many entries the library's own bind calls give it, from a
    tuple display (`n_modes=(n1, n2, n3)` in a transpose rule) or the enclosing parameter's annotation
    (`n_modes: tuple[int, int, int]`, passed on as `n_modes` or `tuple(n_modes)`), the first one found."""
    out: dict[str, int] = {}
    for module in modules:
        tree = module_tree(module)
        for caller, call in _calls_in(tree) if tree is not None else ():
            if not _binds(call, names):
                continue
            annotations = {} if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)) else {
                a.arg: a.annotation for a in caller.args.posonlyargs + caller.args.args + caller.args.kwonlyargs
                if a.annotation is not None}
            for keyword in call.keywords:
                if keyword.arg in wanted and keyword.arg not in out:
                    arity = _tuple_arity(keyword.value, annotations)
                    if arity:
                        out[keyword.arg] = arity
    return out


def _tuple_arity(node: ast.expr, annotations: dict[str, ast.expr]) -> int | None:
    """The entries of a tuple display without `*`, or of the fixed-length `tuple[...]` annotating the parameter
    passed (itself, or converted by `tuple(...)`/`list(...)`)."""
    if isinstance(node, (ast.Tuple, ast.List)):
        return len(node.elts) if not any(isinstance(e, ast.Starred) for e in node.elts) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("tuple", "list") \
            and len(node.args) == 1:
        node = node.args[0]
    annotation = annotations.get(node.id) if isinstance(node, ast.Name) else None
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.slice, ast.Tuple):
        entries = annotation.slice.elts
        fixed = not any(isinstance(e, ast.Constant) and e.value is Ellipsis for e in entries)
        return len(entries) if fixed else None
    return None


def bind_site_operands(names: set[str], modules: list[Any], holders: frozenset[str] = frozenset()
                       ) -> list[list[str]]:
    """The operands of every `NAME.bind(a, b, ...)` call in the modules, and of every call `HOLDER(a, b, ...)` of an
    object in `holders` that binds the primitive it holds (a kernel object's `__call__`), as the names (or "" for
    an expression) the library passes: how many operands its own code binds, and what it calls them. Calls with
    `*args` are skipped: their count is unknown."""
    from .._harness.source import called_name

    out: list[list[str]] = []
    for module in modules:
        tree = module_tree(module)
        if tree is None:
            continue
        for _, call in _calls_in(tree):
            bound = isinstance(call.func, ast.Attribute) and call.func.attr == "bind" and _binds(call, names)
            if not (bound or called_name(call.func) in holders):
                continue
            if any(isinstance(a, ast.Starred) for a in call.args):
                continue
            operands = [a.id if isinstance(a, ast.Name) else "" for a in call.args]
            if operands not in out:
                out.append(operands)
    return out


def bind_calls(names: set[str], modules: list[Any]) -> list[tuple[Any, Any, ast.Call]]:
    """(module, enclosing function or None, call) for every `NAME.bind(...)` call in the modules."""
    return [(module, caller, call) for module in modules for tree in [module_tree(module)] if tree is not None
            for caller, call in _calls_by_name(tree).get("bind", ())  # `x.bind(...)` only, from the index
            if isinstance(call.func, ast.Attribute) and _binds(call, names)]


def callee_defaults(fn: Any, wanted: set[str]) -> dict[str, tuple[Any, str]]:
    """(value, where it was read) for the parameters `wanted` of `fn` (a primitive's impl) that it hands, unchanged,
    to a function of the package whose parameter has a literal default: `_impl(x, *, upsampfac)` calling
    `nufft(x, upsampfac=upsampfac)` of `def nufft(x, upsampfac=2.0)`. The callee's default is the value its
    library uses when nobody asks otherwise, so the bind param takes it."""
    from .._harness.source import resolved

    function = _locate.unwrap(fn)
    try:
        node = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return {}
    namespace = getattr(function, "__globals__", {})
    out: dict[str, tuple[Any, str]] = {}
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        callee = resolved(call.func, namespace)
        if not (inspect.isfunction(callee) and _locate.is_user_code(callee)):
            continue
        try:
            params = list(inspect.signature(callee).parameters.values())
        except (TypeError, ValueError):
            continue
        handed = {p.name: a.id for p, a in zip(params, call.args) if isinstance(a, ast.Name)
                  and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}
        handed.update({k.arg: k.value.id for k in call.keywords if k.arg and isinstance(k.value, ast.Name)})
        for param in params:
            name = handed.get(param.name)
            if name in wanted and name not in out and _literal_default(param.default):
                out[name] = (param.default, f"the default of `{param.name}` in {callee.__module__}:"
                                            f"{callee.__qualname__}, to which {function.__name__} hands it")
    return out


def _literal_default(value: Any) -> bool:
    return isinstance(value, (bool, int, float, str)) or (
        isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str)) for v in value))


def paired_params(names: set[str], modules: list[Any], missing: set[str], known: dict[str, Any]
                  ) -> dict[str, tuple[Any, str]]:
    """(value, where it was read) for `missing` bind params that a bind call of the primitive pairs with another of
    its params by name: `p.bind(x, upsampfac=upsampfac_T, upsampfac_T=upsampfac)` in a transpose rule, which binds
    the adjoint with the forward transform's settings swapped. Both names are params of one primitive, passed for
    each other, so they take values of one domain: a missing one takes its partner's known value."""
    out: dict[str, tuple[Any, str]] = {}
    for module, caller, call in bind_calls(names, modules):
        for keyword in call.keywords:
            if keyword.arg is None or not isinstance(keyword.value, ast.Name) or keyword.value.id == keyword.arg:
                continue
            pair = (keyword.arg, keyword.value.id)
            for wanted, partner in (pair, pair[::-1]):
                if wanted in missing and wanted not in out and partner in known:
                    out[wanted] = (known[partner], f"`{partner}` ({module.__name__} line {call.lineno}, where "
                                                   f"{_name_of(caller)} binds `{keyword.arg}={keyword.value.id}`)")
    return out


def bound_by_keyword(names: set[str], modules: list[Any]) -> set[str]:
    """The keywords any `NAME.bind(..., k=v)` call in the modules passes, or a call of the object holding the
    primitive (`NAME(..., k=v)`, which forwards them): bind params, as the library binds them."""
    out: set[str] = set()
    for module in modules:
        tree = module_tree(module)
        for _, call in _calls_in(tree) if tree is not None else ():
            if _binds(call, names):
                out.update(k.arg for k in call.keywords if k.arg is not None)
    return out


def bound_positionally(names: set[str], modules: list[Any]) -> int:
    """The most operands any `NAME.bind(a, b, *rest)` call in the modules passes positionally before a `*`."""
    most = 0
    for module in modules:
        tree = module_tree(module)
        for _, call in _calls_in(tree) if tree is not None else ():
            if isinstance(call.func, ast.Attribute) and call.func.attr == "bind" and _binds(call, names):
                leading = next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), len(call.args))
                most = max(most, leading)
    return most


_UNKNOWN = object()


# A module's calls, listed once per parsed tree: every primitive of a package asks for its bind sites, operands
# and annotations, and walking a large library's trees again each time took tens of seconds.
_CALLS: weakref.WeakKeyDictionary[ast.AST, list[tuple[Any, ast.Call]]] = weakref.WeakKeyDictionary()


def _calls_in(tree: ast.Module) -> list[tuple[Any, ast.Call]]:
    """(enclosing function or None, call) for every call in the module; the class each call is written in (through
    nested functions) goes to `_CLASS_OF`."""
    found = _CALLS.get(tree)
    if found is None:
        found = []
        stack: list[tuple[Any, str, ast.AST]] = [(None, "", tree)]
        while stack:
            caller, owner, node = stack.pop()
            for child in ast.iter_child_nodes(node):
                inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) else caller
                if isinstance(child, ast.Call):
                    found.append((caller, child))
                    if owner:
                        _CLASS_OF[child] = owner
                stack.append((inner, child.name if isinstance(child, ast.ClassDef) else owner, child))
        _CALLS[tree] = found
    return found


# the class a call is written in: `cls._PRIM.bind(...)` in a method of `Plugin` binds `Plugin._PRIM`
_CLASS_OF: weakref.WeakKeyDictionary[ast.Call, str] = weakref.WeakKeyDictionary()


_BY_NAME: weakref.WeakKeyDictionary[ast.AST, dict[str, list[tuple[Any, ast.Call]]]] = weakref.WeakKeyDictionary()


def _calls_by_name(tree: ast.Module) -> dict[str, list[tuple[Any, ast.Call]]]:
    """The module's calls by the name called (`name(...)` and `x.name(...)`), indexed once per parsed tree."""
    index = _BY_NAME.get(tree)
    if index is None:
        from .._harness.source import called_name

        index = {}
        for caller, call in _calls_in(tree):
            called = called_name(call.func)
            if called is not None:
                index.setdefault(called, []).append((caller, call))
        _BY_NAME[tree] = index
    return index


def calls_named(tree: ast.Module, name: str) -> list[ast.Call]:
    """The module's calls of `name` (`name(...)` or `x.name(...)`), in source order."""
    calls = [call for _, call in _calls_by_name(tree).get(name, ())]
    return sorted(calls, key=lambda call: (call.lineno, call.col_offset))


# the usual names of the array libraries' own namespaces: a call through them is never the package's own object
_FOREIGN_NAMESPACES = frozenset({"jnp", "np", "numpy", "jax", "lax", "math", "scipy", "jsp", "onp"})


def _binds(call: ast.Call, names: set[str]) -> bool:
    """Whether `call` binds (or calls) the primitive held under one of `names`: a plain name, the attribute of an
    object holding it, or a class attribute spelled in full (`HaloPrimitive.outer_primitive`: a package whose
    primitive classes all name theirs `outer_primitive` binds each under its own class) or through `cls`/`self` in
    that class's own code (`cls._PRIM.bind(...)`, also from a function nested in one of its methods)."""
    func: ast.expr = call.func
    bound = isinstance(func, ast.Attribute) and func.attr == "bind"
    if isinstance(func, ast.Attribute) and bound:
        func = func.value
    if isinstance(func, ast.Name):
        return func.id in names
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in names:  # a holder's name called through JAX's or NumPy's namespace (`jnp.concatenate(...)`) is
        return bound or not (isinstance(func.value, ast.Name) and func.value.id in _FOREIGN_NAMESPACES)  # theirs
    owner = func.value
    if isinstance(owner, ast.Name) and owner.id in ("cls", "self"):  # the class the call is written in
        return f"{_CLASS_OF.get(call, owner.id)}.{func.attr}" in names
    return isinstance(owner, ast.Name) and f"{owner.id}.{func.attr}" in names


def _literal_constants(tree: ast.Module) -> dict[str, Any]:
    """Module-level names bound to a literal, directly or through another such name (`_order = _DEFAULT`)."""
    out: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name):
            continue
        if isinstance(value, ast.Name):
            if value.id in out:
                out[target.id] = out[value.id]
            continue
        try:
            out[target.id] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return out


def _literal_defaults(caller: Any) -> dict[str, Any]:
    """The enclosing function's parameters with a literal default, by name."""
    if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {}
    args = caller.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    out: dict[str, Any] = {}
    for arg, default in pairs:
        try:
            out[arg.arg] = ast.literal_eval(default)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return out


def _rebound(caller: Any) -> dict[str, list[ast.expr]]:
    """Names the enclosing function assigns in its body (`if order is None: order = _DEFAULT`), with the values."""
    out: dict[str, list[ast.expr]] = {}
    if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return out
    for node in ast.walk(caller):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out.setdefault(node.targets[0].id, []).append(node.value)
    return out


def _static_value(node: ast.expr, constants: dict[str, Any], defaults: dict[str, Any],
                  rebound: dict[str, list[ast.expr]] | None = None, depth: int = 0) -> Any:
    """The value `node` stands for when it is known without running anything: a literal, a module-level literal
    constant (through chains of names), a value the function assigns the name (a parameter defaulting to None
    replaced by a module constant is passed as that constant, never as None), else the parameter's default."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if not isinstance(node, ast.Name) or depth > 4:
        return _UNKNOWN
    for value in (rebound or {}).get(node.id, []):
        if not (isinstance(value, ast.Name) and value.id == node.id):
            known = _static_value(value, constants, defaults, None, depth + 1)
            if known is not _UNKNOWN and known is not None:
                return known
    if node.id in defaults and not (rebound or {}).get(node.id):
        return defaults[node.id]
    if node.id in constants:
        return constants[node.id]
    return _UNKNOWN
