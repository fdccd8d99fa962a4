"""The plan of the traced-reach phase (`_traced_reach`), from the package's source alone (never run): the sites
inside module-level functions and methods that make a rule or call a callback or custom solve (`sites_in`), which of
them discovered or recorded rules already cover, and the public functions leading to the rest, nearest first
(`plan`)."""

from __future__ import annotations

import ast
import inspect
import os
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from . import _rule_factories
from .._core import _locate
from .._core._report import Location
from .._harness.source import called_name, resolved

# Calls that make a rule (or are a callback call site), by the name they are called with.
RULE_MAKERS = {"custom_jvp": "custom_jvp", "custom_vjp": "custom_vjp", "custom_vmap": "custom_vmap",
               "Primitive": "primitive", "pure_callback": "callback", "io_callback": "callback",
               "ffi_call": "callback", "custom_linear_solve": "solve", "custom_root": "solve"}
# Public functions traced per run at most (each costs an inference ladder and a trace).
MAX_CARRIERS = 16
# Calls between a public function and the function holding a site, at most.
MAX_DEPTH = 3


@dataclass
class Site:
    """Where a rule is made (or a callback called) inside a module-level function."""

    module: ModuleType
    path: str
    line: int
    kind: str  # custom_jvp, custom_vjp, custom_vmap, primitive, callback
    function: str  # the module-level function enclosing it (`Class.method` for a method of a module-level class)
    first: int  # that function's lines
    last: int
    reached: bool = False
    # names whose call leads to it: the function's own; a method's class (instances are made by calling it) and
    # the method's name
    entries: frozenset[str] = frozenset()
    # a method of a base class making a rule from what each subclass does (`Op.__call__` wrapping `self._fwd`):
    # every function leading to it through another subclass makes another rule, so it stays to be reached
    per_subclass: bool = False

    def __post_init__(self) -> None:
        if not self.entries:
            cls, _, method = self.function.rpartition(".")
            self.entries = frozenset({cls, method} if cls else {method})


@dataclass
class Tried:
    carrier: str
    outcome: str  # why it did not reach a site, or "" when it reached something


@dataclass
class Plan:
    sites: list[Site] = field(default_factory=list)
    carriers: list[tuple[ModuleType, str]] = field(default_factory=list)  # (module, public function), nearest first
    # private module-level functions holding a site, run themselves once no public function has reached it (a
    # helper `_odd_sized(fn, *xs)` making its custom_vmap, called only from the methods of a private class)
    makers: list[tuple[ModuleType, str]] = field(default_factory=list)


def _called_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, (ast.Name, ast.Attribute)) and called_name(func) in ("partial",) and node.args:
            return called_name(node.args[0])  # functools.partial(jax.custom_vjp, nondiff_argnums=...)
        return called_name(func)
    return called_name(node)


def sites_in(module: ModuleType) -> list[Site]:
    """Rule-making calls and decorators inside the module-level functions of `module` (read, never run)."""
    from .._harness.source import module_tree

    tree = module_tree(module)
    path = getattr(module, "__file__", None)
    if tree is None or not path:
        return []
    makers = {**RULE_MAKERS, **_maker_aliases(tree)}
    out: list[Site] = []
    for owner, top in _functions_and_methods(tree):
        last = getattr(top, "end_lineno", None) or top.lineno
        own_decorators = {id(sub) for deco in top.decorator_list for sub in ast.walk(deco)}
        forwarded = _forwarded_maker(top, makers)
        for node in ast.walk(top):
            if id(node) in own_decorators or node is forwarded:  # `@custom_jvp def f`: made at import, a module
                continue  # attribute; `return jax.custom_vjp(func, ...)`: an alias of the maker, no rule of its own
            made: list[tuple[int, str]] = []
            if isinstance(node, ast.Call) and node is not top:
                name = _called_name(node)
                if name in makers and not _foreign_class(module, _maker_expr(node)):
                    made.append((node.lineno, makers[name]))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not top:
                for deco in node.decorator_list:
                    name = _called_name(deco)
                    if name in makers:
                        made.append((node.lineno, makers[name]))
            out.extend(Site(module, path, line, kind, owner, top.lineno, last) for line, kind in made)
    unique = {(s.line, s.kind): s for s in out}  # a decorator is also a Call node
    return sorted(unique.values(), key=lambda s: s.line)


def _forwarded_maker(top: ast.FunctionDef | ast.AsyncFunctionDef, makers: dict[str, str]) -> ast.Call | None:
    """The call of a function whose whole body returns a rule maker (custom_jvp, custom_vjp, custom_vmap) applied to
    its own parameter (a backend layer's `def custom_vjp(func, nondiff_argnums=()): return jax.custom_vjp(func,
    nondiff_argnums=nondiff_argnums)`): the function is another name of the maker, and the rules are made where it is
    called (sites of their own: the maker's name is called there). A callback or a solve forwarding its parameters
    (`return lax.custom_linear_solve(matvec, b, ...)`) is a call, and stays a site."""
    body = [s for s in top.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return None
    call = body[0].value
    if makers.get(_called_name(call) or "") not in ("custom_jvp", "custom_vjp", "custom_vmap"):
        return None
    params = {a.arg for a in [*top.args.posonlyargs, *top.args.args]}
    first = call.args[0] if call.args else None
    return call if isinstance(first, ast.Name) and first.id in params else None


def _maker_expr(node: ast.Call) -> ast.expr:
    """The expression naming the maker `_called_name` read: `functools.partial(jax.custom_vjp, ...)`'s first
    argument, else the called function."""
    func = node.func
    if isinstance(func, (ast.Name, ast.Attribute)) and called_name(func) in ("partial",) and node.args:
        return node.args[0]
    return func


def _foreign_class(module: ModuleType, func: ast.expr) -> bool:
    """Whether the called name resolves, in the module's namespace, to a class of the library's own that no JAX
    class is a base of: a quantum library's gate base class named `Primitive` makes gates, not rules. A name that
    does not resolve there (a local import) or resolves to a function (a library's `custom_vjp` wrapper) is kept."""
    obj = resolved(func, vars(module))
    if not isinstance(obj, type):
        return False
    return not any((getattr(base, "__module__", "") or "").split(".")[0] in ("jax", "jaxlib") for base in obj.__mro__)


def _maker_aliases(tree: ast.Module) -> dict[str, str]:
    """Module-level names bound to a rule maker (`callback = functools.partial(jax.pure_callback,
    vmap_method="sequential")`, `pcb = jax.pure_callback`): a call of the name is a site of that maker's kind."""
    out: dict[str, str] = {}
    for top in tree.body:
        if isinstance(top, ast.Assign) and len(top.targets) == 1 and isinstance(top.targets[0], ast.Name):
            name = _called_name(top.value) if isinstance(top.value, ast.Call) else called_name(top.value)
            if name in RULE_MAKERS and (not isinstance(top.value, ast.Call) or called_name(top.value.func)
                                        in ("partial",)):
                out[top.targets[0].id] = RULE_MAKERS[name]
    return out


def _functions_and_methods(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Module-level functions, and the methods of module-level classes (a rule built in `__init__` or a method) as
    `Class.method`."""
    out: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    for top in tree.body:
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((top.name, top))
        elif isinstance(top, ast.ClassDef):
            out.extend((f"{top.name}.{node.name}", node) for node in top.body
                       if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))
    return out


def _calls_by_function(module: ModuleType) -> dict[str, set[str]]:
    """Module-level function name -> the names it calls (plain or attribute), and the names it hands on as values
    (`shard_map(_kernel, ...)`, `jax.vmap(f)`, `lax.scan(step, ...)`: a transformation calls them), from the
    source."""
    from .._harness.source import module_tree

    tree = module_tree(module)
    out: dict[str, set[str]] = {}
    tables = _dispatch_tables(tree)
    for top in tree.body if tree is not None else []:
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
            calls = [c for c in ast.walk(top) if isinstance(c, ast.Call)]
            named = {called_name(c.func) for c in calls}
            handed = {a.id for c in calls for a in [*c.args, *(k.value for k in c.keywords)]
                      if isinstance(a, ast.Name)}
            # `_BACKENDS[backend](x)`: a function that reads a module's table of functions calls its members
            read = {n.id for n in ast.walk(top) if isinstance(n, ast.Name) and n.id in tables}
            out[top.name] = {n for n in named | handed if n} | {m for t in read for m in tables[t]}
    return out


def table_selectors(module: ModuleType, name: str) -> list[tuple[str, list[tuple[Any, str]]]]:
    """(parameter, [(key, the name of the function it selects)]) for each module table of functions that the function
    `name` indexes with one of its parameters (`_BACKENDS[backend](x)`, `backend` a parameter, reassigned or not):
    each key selects other rules, which a trace on the parameter's default never reaches."""
    from .._harness.source import function_source, module_tree

    tables = _dispatch_tables(module_tree(module))
    found = function_source(_locate.unwrap(getattr(module, name, None)))
    if found is None or not tables:
        return []
    params = {a.arg for a in [*found.node.args.posonlyargs, *found.node.args.args, *found.node.args.kwonlyargs]}
    out: list[tuple[str, list[tuple[Any, str]]]] = []
    for node in ast.walk(found.node):
        if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in tables
                and isinstance(node.slice, ast.Name) and node.slice.id in params):
            table = getattr(module, node.value.id, None)
            if isinstance(table, dict) and not any(p == node.slice.id for p, _ in out):
                out.append((node.slice.id, [(key, getattr(fn, "__name__", "")) for key, fn in table.items()]))
    return out


def _dispatch_tables(tree: ast.Module | None) -> dict[str, set[str]]:
    """{name: the names of its members} for the module-level dicts, lists and tuples of plain names
    (`_BACKENDS = {Backend.ROWS: _rows, ...}`): a table the module dispatches through."""
    out: dict[str, set[str]] = {}
    for top in tree.body if tree is not None else []:
        target = (top.targets[0] if isinstance(top, ast.Assign) and len(top.targets) == 1
                  else top.target if isinstance(top, ast.AnnAssign) else None)
        value = top.value if isinstance(top, (ast.Assign, ast.AnnAssign)) else None
        members = (value.values if isinstance(value, ast.Dict) else value.elts
                   if isinstance(value, (ast.List, ast.Tuple)) else [])
        names = {m.id for m in members if isinstance(m, ast.Name)}
        if isinstance(target, ast.Name) and names and len(names) == len(members):
            out[target.id] = names
    return out


def run_at_import(tree: ast.Module | None) -> list[ast.stmt]:
    """The module's top-level statements that run when it is imported: not the `if __name__ == "__main__":` block
    (a demo calling the module's own factories makes nothing an importer sees)."""
    return [top for top in (tree.body if tree is not None else []) if not _main_guard(top)]


def _main_guard(node: ast.stmt) -> bool:
    if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare) or len(node.test.comparators) != 1:
        return False
    sides = [node.test.left, node.test.comparators[0]]
    return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
            and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides))


def _named_at_import(module: ModuleType) -> set[str]:
    """Every name the module's top-level statements mention or decorate with, class bodies included (calls,
    annotations, values): a class named there may have instances made at import, which hold what its methods
    make."""
    from .._harness.source import module_tree

    tree = module_tree(module)
    out: set[str] = set()
    for top in run_at_import(tree):
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            nodes: list[ast.AST] = list(top.decorator_list)
            if isinstance(top, ast.ClassDef):
                nodes += [s for s in top.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
                nodes += [d for s in top.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                          for d in s.decorator_list]
        else:
            nodes = [top]
        out.update(name for node in nodes for sub in ast.walk(node)
                   if isinstance(sub, (ast.Call, ast.Name, ast.Attribute)) for name in [_called_name(sub)] if name)
    return out


def _called_at_import(module: ModuleType) -> set[str]:
    """Names the module's own top-level statements call or decorate with: what they make is a module attribute
    (or a class attribute), found by attribute discovery. Only calls and decorators count: a name merely mentioned
    (an annotation, a dict value, a re-export `f = f`) makes nothing."""
    from .._harness.source import module_tree

    tree = module_tree(module)
    out: set[str] = set()
    for top in run_at_import(tree):
        decorators: list[ast.expr] = []
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            decorators = list(top.decorator_list)
            nodes: list[ast.AST] = []
            if isinstance(top, ast.ClassDef):  # class bodies run at import too (not their methods)
                nodes += [s for s in top.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
                decorators += [d for s in top.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                               for d in s.decorator_list]
        else:
            nodes = [top]
        calls = [sub for node in [*nodes, *decorators] for sub in ast.walk(node) if isinstance(sub, ast.Call)]
        for node in [*calls, *decorators]:
            name = _called_name(node)
            if name:
                out.add(name)
    return out


def plan(modules: list[ModuleType], covered: list[Location]) -> Plan:
    """The sites attribute discovery did not reach (no discovered rule is defined inside their function), and the
    public functions that lead to them, nearest first."""
    covered_at = [(os.path.realpath(c.path), c.line) for c in covered]
    result = Plan()
    # a factory any checked module applies as it is imported (`foo_p = make_primitive(...)` in another module of the
    # package) makes module attributes, which attribute discovery found
    at_import = {name for module in modules for name in _called_at_import(module)}
    # methods keep the broader rule: a class merely named at import (an annotation, a registry) may be instantiated
    # there; tracing every caller of a common method name (`run`) instead runs whole solvers op by op
    named = {name for module in modules for name in _named_at_import(module)}
    subclasses = _subclass_names(modules)
    for module in modules:
        sites = sites_in(module)
        done = _covered_sites(sites, covered_at)
        for site in sites:
            cls, _, method = site.function.rpartition(".")
            # a decorator, factory or class applied as a module is imported made module attributes, which discovery
            # found: a class's instances, or the rules a factory returns; a decorator whose product makes the rule
            # only when called is a plain function, reached by tracing
            if site.function in at_import and _returns_its_rule(module, site):
                continue
            if cls in at_import | named:
                if method != "__call__":
                    # instances made at import hold what their constructor made (discovery found it); a method
                    # named at import may run there, and tracing every caller of a common name (`run`, `step`)
                    # runs whole solvers op by op
                    continue
                # an op object making its rule on every call (`fn = Normalization(); fn(x)`): reached through
                # the functions that make an instance of the class or a subclass, never by the method's name
                site.entries = frozenset({cls, *subclasses.get(cls, ())})
                site.per_subclass = bool(subclasses.get(cls))
            if id(site) not in done:
                result.sites.append(site)
    if not result.sites:
        return result
    graph = {id(m): _calls_by_function(m) for m in modules}
    wanted = {name for s in result.sites for name in s.entries}
    ranked: dict[tuple[int, str], tuple[int, ModuleType]] = {}
    frontier = set(wanted)
    for depth in range(MAX_DEPTH + 1):
        for module in modules:
            for name, calls in graph[id(module)].items():
                key = (id(module), name)
                if key in ranked:
                    continue
                holds_site = depth == 0 and any(s.function == name and s.module is module for s in result.sites)
                if holds_site or (depth > 0 and calls & frontier):
                    ranked[key] = (depth, module)
        frontier = {name for (_, name), (d, _) in ranked.items() if d == depth} | frontier
    public = [(depth, module, name) for (_, name), (depth, module) in ranked.items()
              if not name.startswith("_") and callable(getattr(module, name, None))
              and getattr(_locate.unwrap(getattr(module, name)), "__module__", None) == module.__name__]
    public.sort(key=lambda item: item[0])
    result.carriers = [(module, name) for _, module, name in public[:MAX_CARRIERS]]
    own = {(id(s.module), s.function): s.module for s in result.sites if "." not in s.function}
    result.makers = [(module, name) for (_, name), module in own.items()
                     if name.startswith("_") and inspect.isfunction(getattr(module, name, None))]
    return result


def _subclass_names(modules: list[ModuleType]) -> dict[str, set[str]]:
    """Class name -> the names of the classes of the walked modules derived from it, at any depth (by the names
    their bases are written with: `class Normalization(op.Op[...])`), from the source."""
    from .._harness.source import module_tree

    parents: dict[str, set[str]] = {}
    for module in modules:
        tree = module_tree(module)
        for top in tree.body if tree is not None else []:
            if isinstance(top, ast.ClassDef):
                bases = [b.value if isinstance(b, ast.Subscript) else b for b in top.bases]
                parents.setdefault(top.name, set()).update(n for b in bases for n in [called_name(b)] if n)
    out: dict[str, set[str]] = {}
    for name in parents:
        seen: set[str] = set()
        frontier = {name}
        while frontier:
            frontier = {c for c, bases in parents.items() if bases & frontier and c not in seen and c != name}
            seen |= frontier
        if seen:
            out[name] = seen
    return out


def _returns_its_rule(module: ModuleType, site: Site) -> bool:
    """Whether the function returns the rule made at the site, or stores it on an object its caller hands it."""
    from .._harness.source import module_tree

    tree = module_tree(module)
    return bool(_rule_factories.returned_sites(tree, site.function, [site.line])
                or _rule_factories.published_sites(tree, site.function, [site.line]))


def _covered_sites(sites: list[Site], covered_at: list[tuple[str, int]]) -> set[int]:
    """The sites (by id) a checked rule was made at: each covered line inside a function is the rule made by the
    nearest site at or above it (a rule's `def` and its JVP/batching rules follow the call or decorator making it),
    so a function making two rules, one of them checked, still leaves the other to check."""
    done: set[int] = set()
    real = {s.path: os.path.realpath(s.path) for s in sites}  # one module's sites: one file, resolved once
    for path, line in covered_at:
        inside = [s for s in sites if real[s.path] == path and s.first <= line <= s.last]
        if not inside:
            continue
        above = [s for s in inside if s.line <= line]
        done.add(id(max(above, key=lambda s: s.line) if above else min(inside, key=lambda s: s.line)))
    return done
