"""Rules made by calling the user's code with configuration values: rule factories, and methods of classes.

`make_softplus(beta=1.0)` returning the custom_jvp it builds, or `_lookup_fn(padding_idx, scale)` behind an
`lru_cache` returning a custom_vjp: tracing the package's public functions (`_traced_reach`) reaches such a rule only
where one of them *calls* what the factory made, and a factory only returns it. A site tracing left unreached, in a
module-level function whose own `return` hands back the rule the site makes, is reached by calling that function:
each required parameter keeps its default, else takes the literal the package's own calls pass (by keyword or
position), else None where it is Optional, False where it is a bool, the int ladder's first value where it takes an
int, 1.0 where it takes a float, jaxdiag's elementwise stand-in where it takes a function (its verdicts then
notes); a bool its body tests before making the rule (`if custom_vjp:`) takes the value reaching the rule
(`guarding_flags`). What the call returns, when it is a rule, is checked as a target on inferred
inputs (findings graded as such); every value assumed is named in the report. When it returns a function it defines
that calls the rule (`estimate(matvec, vec)`), that function is checked as a function target, the rule nested in
it; a parameter its code calls takes jaxdiag's stand-in, and its verdicts are then notes (`_callables`). A site in
a method of a module-level class is reached on an instance built the same way (`check_methods`). A factory or class
whose parameters cannot be given values this way is never called: its site stays JXN012, with that reason.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import sys
from types import ModuleType
from typing import Any, Callable

from .._core._report import TargetReport

# Annotations read as text (`Optional[int]`, `int | None`, `bool`, `float`), with or without a module prefix.
_OPTIONAL = re.compile(r"^(typing\.)?Optional\[.*\]$|(^|\|)None($|\|)|^None$")
_BOOL = re.compile(r"^(builtins\.)?bool$")
_FLOAT = re.compile(r"^(builtins\.)?float$")
# An unannotated parameter a factory names what it makes with (`name`, `broadcast_name`, `prim_name`, `tag`)
_NAME = re.compile(r"(^|_)(name|tag|label)$")
# a parameter whose annotation or docstring type is an array or a matrix and nothing else (`A :
# scipy.sparse.csr_matrix`, `W: np.ndarray`; never `jax.Array | object`): a factory closing over a constant operator
# (a sparse matrix its rule multiplies by)
_MATRIX = re.compile(r"((numpy|np|jnp|jax|scipy|sparse|sp)\.)*(ndarray|ArrayLike|array_like|Array|array|matrix|"
                     r"csr_matrix|csc_matrix|coo_matrix|spmatrix|sparray|csr_array|csc_array)")
_SPARSE = re.compile(r"\b(sparse|csr|csc|coo|spmatrix|sparray)")
MATRIX_SIZE = 3  # the side of the host matrix a matrix parameter is given
_MISSING = object()
# What a factory can return: a callback or custom solve call site returns what it computes, never a rule.
_RULE_KINDS = ("custom_jvp", "custom_vjp", "custom_vmap", "primitive")


def returned_sites(tree: ast.Module | None, function: str, lines: list[int]) -> list[int]:
    """Of the site lines inside `function` (module-level, or `Class.method`), those whose rule its own body
    returns: a decorated `def` returned by name, a name assigned from the rule-making call and returned, or the call
    returned directly; and those whose rule it attaches to a returned one's rules (`ad.primitive_jvps[prim] =
    partial(_jvp, jvp_p)`, `prim.def_impl(partial(_run, helper_p))`, `register_lowering(prim, partial(..., p))`):
    checking the returned rule binds that one, and checks it as its nested subject."""
    from ._callables import _own_nodes

    top = _function_node(tree, function)
    if top is None:
        return []
    own = _own_nodes(top)
    returned = [n.value for n in own if isinstance(n, ast.Return) and n.value is not None]
    names = {e.id for r in returned for e in ([r] + (list(r.elts) if isinstance(r, ast.Tuple) else []))
             if isinstance(e, ast.Name)}
    spans = {(r.lineno, getattr(r, "end_lineno", r.lineno)) for r in returned}
    bound = _bound_names(own)
    names |= _attached_to(own, names)
    return [line for line in lines
            if bound.get(line) in names or any(first <= line <= last for first, last in spans)]


def published_sites(tree: ast.Module | None, function: str, lines: list[int]) -> list[int]:
    """Of the site lines inside `function`, those whose rule it stores as an attribute of one of its own parameters
    (`cls.inner_primitive = inner_p` in `register_primitive(cls)`): the object its caller hands it holds the rule,
    so where the caller runs at import, attribute discovery finds it there (a class's attributes are walked)."""
    from ._callables import _own_nodes

    top = _function_node(tree, function)
    if top is None:
        return []
    own = _own_nodes(top)
    params = {a.arg for a in top.args.posonlyargs + top.args.args + top.args.kwonlyargs}
    stored = {node.value.id for node in own if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
              and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id in params
                      for t in node.targets)}
    bound = _bound_names(own)
    return [line for line in lines if bound.get(line) in stored]


def _bound_names(own: list[ast.AST]) -> dict[int, str]:
    """{line: the name the statement on it binds}: a `def` (and its decorators' lines), or an assignment to a name."""
    bound: dict[int, str] = {}
    for node in own:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            bound[node.lineno] = node.name
            for deco in node.decorator_list:
                bound[deco.lineno] = node.name
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            for line in range(node.lineno, (getattr(node, "end_lineno", None) or node.lineno) + 1):
                bound.setdefault(line, node.targets[0].id)
    return bound


def _attached_to(nodes: list[ast.AST], returned: set[str]) -> set[str]:
    """The names a function attaches to the rules of the names it returns: in the value stored under a returned
    name (`registry[prim] = ...`), in the arguments of a returned name's method (`prim.def_impl(...)`), or in the
    other arguments of a call taking a returned name first (`register_lowering(prim, ...)`)."""
    held: list[ast.AST] = []
    for node in nodes:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Name)
                                                and t.slice.id in returned for t in node.targets):
            held.append(node.value)
        elif isinstance(node, ast.Call):
            func, args = node.func, [*node.args, *(k.value for k in node.keywords)]
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in returned:
                held.extend(args)
            elif node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in returned:
                held.extend(args[1:])
    return {n.id for value in held for n in ast.walk(value) if isinstance(n, ast.Name)} - returned


def _function_node(tree: ast.Module | None, function: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The node of module-level `function`, or of `Class.method` in a module-level class."""
    owner, _, name = function.rpartition(".")
    body = tree.body if tree is not None else []
    if owner:
        cls = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == owner), None)
        body = cls.body if cls is not None else []
    return next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name), None)


def _annotation_text(param: inspect.Parameter) -> str:
    from .._harness.source import annotation_text

    return annotation_text(param.annotation).replace(" ", "")


def _assumed_value(param: inspect.Parameter, documented: str = "") -> Any:
    """A configuration value for a required parameter from its annotation (or an int-like name), or a host matrix
    where its annotation or its docstring entry's type (`documented`) says it holds one; else _MISSING."""
    from .._run._int_params import int_kind, int_rungs

    text = _annotation_text(param)
    said = text or (documented.split() or [""])[0].rstrip(",.")  # numpydoc's type: the entry's first word
    if _MATRIX.fullmatch(said):
        return _host_matrix(bool(_SPARSE.search(said)))
    if _OPTIONAL.search(text):
        return None
    if _BOOL.match(text):
        return False
    if _FLOAT.match(text):
        return 1.0
    if (not text and _NAME.search(param.name)) or text in ("str", "builtins.str"):
        return param.name  # a name the factory gives what it makes (`Primitive(broadcast_name)`): any string serves
    kind = int_kind(param)
    if kind is not None and kind[0] == "int":
        return int_rungs({0: "int"})[0][0].value
    return _MISSING


def _host_matrix(sparse: bool) -> Any:
    """A square float32 NumPy matrix with a dominant diagonal (invertible, as an operator usually must be), drawn
    from a fixed seed; a SciPy CSR matrix of it where the parameter says sparse and the user's code has imported
    SciPy's sparse module (jaxdiag does not depend on SciPy)."""
    import numpy as np

    rng = np.random.default_rng(0)
    dense = (rng.standard_normal((MATRIX_SIZE, MATRIX_SIZE)) + MATRIX_SIZE * np.eye(MATRIX_SIZE)).astype(np.float32)
    scipy_sparse = sys.modules.get("scipy.sparse")
    return scipy_sparse.csr_matrix(dense) if sparse and scipy_sparse is not None else dense


def factory_arguments(fn: Any, module: ModuleType, name: str, flags: dict[str, bool] | None = None,
                      stand_ins: bool = False) -> tuple[dict[str, Any], list[str]] | str:
    """({parameter: value}, the names whose value was assumed) for calling the factory `fn`, or why it cannot be
    called: its defaults stand, a keyword literal its package's own calls pass comes next, then a bool's value that
    reaches the rule sites (`flags`, from `guarding_flags`), then, with `stand_ins`, jaxdiag's elementwise stand-in
    for a parameter that takes a function (`define_fdjvp(func: Callable)`, `_callables.callable_params`), then
    `_assumed_value`."""
    from .._loading._passthrough import bind_site_params
    from ._callables import LADDER, StandIn, callable_params

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return "its signature cannot be read"
    wanted = {p.name: p for p in params if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    root = module.__name__.split(".")[0]
    package = [m for n, m in sorted(sys.modules.items()) if m is not None and n.split(".")[0] == root]
    given: dict[str, Any] = bind_site_params({name}, package, set(wanted)) if wanted else {}
    for pname, value in _positional_literals(name, package, params).items():
        if pname in wanted:
            given.setdefault(pname, value)
    assumed: list[str] = []
    documented = _documented_types(fn, list(wanted))
    functions = set(callable_params(fn)[0]) if stand_ins else set()
    for pname, param in wanted.items():
        if pname in given:
            continue
        if pname in functions:
            given[pname], assumed = StandIn(LADDER[0]), assumed + [pname]  # the elementwise one
            continue
        value = (flags or {}).get(pname, _MISSING) if _BOOL.match(_annotation_text(param)) else _MISSING
        value = _assumed_value(param, documented.get(pname, "")) if value is _MISSING else value
        if value is _MISSING:
            return (f"its parameter `{pname}` has no default, no literal at a call site, and no Optional, bool, int, "
                    "float, str or array annotation (or name-like name) to give it a value")
        given[pname], assumed = value, assumed + [pname]
    return given, assumed


def _shown(value: Any) -> str:
    """A value as a report names it: a matrix by its type and shape (`csr_matrix f32[3,3]`), not its repr."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, tuple) and shape and dtype is not None:
        import numpy as np

        from .._loading._inputs import ArgSpec, template_text

        return f"{type(value).__name__} {template_text(ArgSpec(np.dtype(dtype), shape))}"
    return repr(value)


def _documented_types(fn: Any, names: list[str]) -> dict[str, str]:
    """{parameter: its docstring entry} (numpydoc `A : scipy.sparse.csr_matrix`, Google `A (np.ndarray): ...`)."""
    from .._harness.source import parameter_descriptions

    doc = getattr(fn, "__doc__", None)
    return parameter_descriptions(doc, names) if isinstance(doc, str) and names else {}


def _positional_literals(name: str, modules: list[ModuleType], params: list[inspect.Parameter]) -> dict[str, Any]:
    """{parameter: literal} from the package's own calls `name("total", 0)`: the call passing the most literals
    positionally wins (the first of equals, in module then source order); a position after `*args` is unknown.
    The calls come from each module's index of calls by name (walking every tree of a large package for each
    factory took seconds)."""
    from .._loading._passthrough import calls_named, module_tree

    order = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    best: dict[str, Any] = {}
    for module in modules:
        tree = module_tree(module)
        for node in calls_named(tree, name) if tree is not None else ():
            found: dict[str, Any] = {}
            for position, arg in zip(order, node.args):
                if isinstance(arg, ast.Starred):
                    break
                if isinstance(arg, ast.Constant):
                    found[position] = arg.value
            if len(found) > len(best):
                best = found
    return best


def call_factory(fn: Any, given: dict[str, Any]) -> Any:
    """Call the factory (through the harness): positional-only parameters by position, the others by keyword."""
    from .._harness import call_user

    params = inspect.signature(fn).parameters.values()
    positional = [given.pop(p.name) for p in params if p.kind == p.POSITIONAL_ONLY and p.name in given]
    return call_user(functools.partial(fn, *positional, **given), quiet=True)


def rules_in(value: Any) -> list[tuple[str, Any]]:
    """(kind, rule) of what a factory returned: the rule itself, or each rule of a returned tuple or list."""
    from .._core._errors import TargetLoadError
    from .._loading._targets import classify

    out = []
    for item in value if isinstance(value, (tuple, list)) else [value]:
        try:
            kind, obj = classify(item)
        except TargetLoadError:
            continue
        if kind != "function":
            out.append((kind, obj))
    return out


def check_returned(lint: Any, sites: list[Any], known: set[int], note: Callable[[str, str], None],
                   starts: Callable[[str], bool] = lambda _: True) -> list[TargetReport]:
    """The rules that module-level functions left unreached return: each such function called once with
    configuration values, each rule it returns checked as a target on inferred inputs. `starts(label)`: whether
    that function's unit runs (`_traced_reach.check_by_tracing`)."""
    from . import _callables
    from .._harness.source import module_tree

    reports: list[TargetReport] = []
    for group in _unreached_groups(sites, methods=False):
        module, function = group[0].module, group[0].function
        label = f"{module.__name__}:{function}"
        tree = module_tree(module)
        made_at = [s.line for s in group if s.kind in _RULE_KINDS]
        lines = returned_sites(tree, function, made_at)
        closure = not lines and returns_closure(tree, function)
        fn = getattr(module, function, None)
        if not (lines or closure) or fn is None or not callable(fn) or not starts(label):
            continue
        flags = guarding_flags(tree, function, [s.line for s in group])
        if lines:
            functions: dict[str, str] = {}
            made = _configured_call(fn, module, function, label, note, flags=flags, stand_ins=functions)
            if made is not None:
                checked = _check_rules(lint, module, group, lines, made, note, known)
                for report in checked if functions else []:  # the rule wraps jaxdiag's stand-in: said so
                    _callables.assume_returned_stand_ins(report, functions)
                reports.extend(checked)
            continue
        made = _configured_call(fn, module, function, label, note, flags=flags,
                                what="returns a function that makes or calls the rule, but is not called")
        if made is not None:
            reports.extend(_check_returned_function(lint, module, group, made, note))
    return reports


def returns_closure(tree: ast.Module | None, function: str) -> bool:
    """Whether module-level `function`'s own body returns a function it defines (`def estimate(...)` then `return
    estimate`, or a lambda): the rule sites inside are reached by calling what it returns."""
    from ._callables import _own_nodes

    top = _function_node(tree, function)
    if top is None:
        return False
    own = _own_nodes(top)
    defined = {n.name for n in own if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return any(isinstance(n, ast.Return) and (isinstance(n.value, ast.Lambda) or (
        isinstance(n.value, ast.Name) and n.value.id in defined)) for n in own)


def guarding_flags(tree: ast.Module | None, function: str, lines: list[int]) -> dict[str, bool]:
    """{parameter: the value reaching the sites at `lines`} for the parameters of `function` its body tests before
    making a rule: `if custom_vjp: f = custom_vjp(f)` (True), `if not plain: ...` (False); the else branch the
    opposite."""
    top = _function_node(tree, function)
    if top is None:
        return {}
    params = {a.arg for a in top.args.posonlyargs + top.args.args + top.args.kwonlyargs}
    out: dict[str, bool] = {}
    for node in ast.walk(top):
        if not isinstance(node, ast.If):
            continue
        test, value = node.test, True
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test, value = test.operand, False
        if not (isinstance(test, ast.Name) and test.id in params):
            continue
        for branch, reaching in ((node.body, value), (node.orelse, not value)):
            if any(_spans(stmt, line) for stmt in branch for line in lines):
                out.setdefault(test.id, reaching)
    return out


def _spans(node: ast.stmt, line: int) -> bool:
    return node.lineno <= line <= (getattr(node, "end_lineno", None) or node.lineno)


def _check_returned_function(lint: Any, module: ModuleType, group: list[Any], made: tuple[Any, str],
                             note: Callable[[str, str], None]) -> list[TargetReport]:
    """The function a factory returned, checked as a function target of its module on inferred inputs (the rules
    it makes or calls being its nested subjects); the group's sites reached when its checks ran."""
    from .._core import _locate

    from . import _callables
    from .. import _rules as rules

    value, call = made
    label = f"{module.__name__}:{group[0].function}"
    if not (inspect.isfunction(value) and _locate.is_user_code(value)):
        note(label, f"called as {call}, it returned no function of yours")
        return []
    checked: list[TargetReport] = []
    for functions in _callables.rungs(value):  # a parameter it calls (`matvec`) takes jaxdiag's stand-in
        given = {name: _callables.StandIn(b) for name, b in functions.items()}
        fn = _callables.with_stand_ins(value, given) if given else value
        shown = f"{call} with {_callables.assumed_text(functions)}" if functions else call
        checked = _check_method(lint, module, value.__name__, fn, shown, how="returned by")
        if _ran(checked):
            for report in checked if functions else []:  # what it computes depends on the stand-in: said so
                _callables.assume_returned_stand_ins(report, functions)
            for site in group:
                site.reached = True
            note(label, f"checked as the function {shown} returns")
            return checked
    skipped = [c.detail for r in checked for c in r.checks if c.status == "skipped" and c.detail]
    why = next((f.message for r in checked for f in r.findings if f.code != rules.INPUTS_INFERRED.code),
               f"no check applies to it ({skipped[0]})" if skipped else "no check ran on it")
    note(label, f"the function {call} returns: {why[:200]}")
    return []  # not checked: its sites keep their JXN012 note, with this reason



def check_methods(lint: Any, sites: list[Any], known: set[int], note: Callable[[str, str], None],
                  starts: Callable[[str], bool] = lambda _: True) -> list[TargetReport]:
    """Sites left unreached in methods of a module-level class: an instance is built the way a factory is called
    (its constructor's parameters filled likewise); a rule the method returns (or `__init__` stores) is checked as a
    target, and any other method is checked as a function target on inferred inputs, the rules it makes or calls
    being its nested subjects. A method that does not run on inferred inputs leaves its sites to JXN012."""
    from .._harness.source import module_tree

    reports: list[TargetReport] = []
    for group in _unreached_groups(sites, methods=True):
        module, function = group[0].module, group[0].function
        owner, _, method = function.partition(".")
        cls = getattr(module, owner, None)
        if not isinstance(cls, type):
            continue
        label = f"{module.__name__}:{function}"
        if not starts(label):
            continue
        built = _configured_call(cls, module, owner, label, note, what="its class is not built")
        if built is None:
            continue
        instance, construction = built
        bound = getattr(instance, method, None)
        lines = returned_sites(module_tree(module), function, [s.line for s in group if s.kind in _RULE_KINDS])
        if method == "__init__":
            value = list(vars(instance).values()) if hasattr(instance, "__dict__") else []
            reports.extend(_check_rules(lint, module, group, [s.line for s in group], (value, construction), note,
                                        known))
        elif lines and callable(bound):
            made = _configured_call(bound, module, method, label, note)
            if made is not None:
                reports.extend(_check_rules(lint, module, group, lines, (made[0], f"{construction}.{made[1]}"),
                                            note, known))
        elif callable(bound):
            checked = _check_method(lint, module, function, bound, construction)
            if _ran(checked):
                for site in group:
                    site.reached = True
                note(label, f"checked as a function on {construction}")
                reports.extend(checked)
            else:
                why = next((f.message for r in checked for f in r.findings), "it did not run")
                note(label, f"on {construction}: {why[:200]}")
    return reports


def _unreached_groups(sites: list[Any], methods: bool) -> list[list[Any]]:
    """The unreached sites by the function (or, with `methods`, the method) holding them, in site order."""
    groups: dict[tuple[int, str], list[Any]] = {}
    for site in sites:
        if not site.reached and ("." in site.function) == methods:
            groups.setdefault((id(site.module), site.function), []).append(site)
    return list(groups.values())


def _configured_call(fn: Any, module: ModuleType, name: str, label: str, note: Callable[[str, str], None],
                     what: str = "returns the rule, but is not called", flags: dict[str, bool] | None = None,
                     stand_ins: dict[str, str] | None = None) -> tuple[Any, str] | None:
    """(what `fn` returns, the call as text) with its parameters filled by `factory_arguments` (`flags`: the bool
    parameters' values reaching the rule sites; with `stand_ins`, a dict, a parameter taking a function gets
    jaxdiag's stand-in, recorded there as {parameter: behaviour}); None, with the reason given to `note`, when it
    cannot be called or raises."""
    from ._callables import StandIn

    arguments = factory_arguments(fn, module, name, flags or {}, stand_ins=stand_ins is not None)
    if isinstance(arguments, str):
        note(label, f"{what}: {arguments}")
        return None
    given, assumed = arguments
    if stand_ins is not None:
        stand_ins.update({k: v.behaviour for k, v in given.items() if isinstance(v, StandIn)})
    shown = [f"{k}={_shown(v)}" + (" (assumed)" if k in assumed else "") for k, v in given.items()]
    call = f"{name}({', '.join(shown)})"
    made = call_factory(fn, dict(given))
    if made.error is not None:
        message = str(made.error).splitlines()[0][:160] if str(made.error) else ""
        note(label, f"called as {call}, it raised {type(made.error).__name__}: {message}")
        return None
    return made.value, call


def _check_rules(lint: Any, module: ModuleType, group: list[Any], lines: list[int], made: tuple[Any, str],
                 note: Callable[[str, str], None], known: set[int]) -> list[TargetReport]:
    """Each rule in what a call returned, checked as a target (the group's sites at `lines` reached)."""

    value, call = made
    label = f"{module.__name__}:{group[0].function}"
    found = [rule for item in (value if isinstance(value, list) else [value]) for rule in rules_in(item)]
    if not found:
        note(label, f"called as {call}, it returned no rule")
        return []
    for site in group:
        site.reached = site.reached or site.line in lines
    note(label, f"called as {call}; returns other rules, not this one")
    reports: list[TargetReport] = []
    for kind, obj in found:
        if id(obj) not in known:
            known.add(id(obj))
            reports.extend(_check_made(lint, module, kind, obj, f"{module.__name__}:{call}"))
    return reports


def _ran(reports: list[TargetReport]) -> bool:
    """Whether some check ran on what was checked (passed or failed): a function no check applies to is no target."""
    return any(c.status in ("passed", "failed") for r in reports for c in r.checks)


def _check_method(lint: Any, module: ModuleType, function: str, bound: Any, construction: str, how: str = "on"
                  ) -> list[TargetReport]:
    """A bound method (or a function a factory returned) checked as a function target of its module (its nested
    rules with it)."""
    from ._discovery import Found

    walked = next((w for w in lint.discovery.walked if w.module is module), None)
    if walked is None:
        return []
    found = Found(bound, "function", walked, function, keys=[f"{walked.label}:{function}",
                                                           f"{module.__name__}:{function}"])
    reports = lint._check(found)
    named = f"{found.label} ({how} {module.__name__}:{construction})"
    for report in reports:  # a nested rule's report keeps its ` > rule` after the function's name
        rest = report.target[len(found.label):] if report.target.startswith(found.label) else ""
        report.target = named + rest
    return reports


def _check_made(lint: Any, module: ModuleType, kind: str, obj: Any, made_by: str) -> list[TargetReport]:
    """One rule a factory returned, checked as a discovered target of its module would be (configured inputs, else
    inferred ones; a JXN004 note when none run), its report named after the factory call."""
    from .._core import _locate
    from ._discovery import Found

    walked = next((w for w in lint.discovery.walked if w.module is module), None)
    if walked is None:
        return []
    # a rule around jaxdiag's stand-in (a decorator factory's) has no name of its own: the factory's
    factory = made_by.rpartition(":")[2].partition("(")[0] or kind
    name = obj.name if kind == "primitive" else getattr(_locate.unwrap(getattr(obj, "fun", None)), "__name__", factory)
    found = Found(obj, kind, walked, name, keys=list(dict.fromkeys([f"{walked.label}:{name}",
                                                                  f"{module.__name__}:{name}"])))
    reports = lint._check(found)
    for report in reports:
        report.target = f"{found.label} (made by {made_by})"
    return reports
