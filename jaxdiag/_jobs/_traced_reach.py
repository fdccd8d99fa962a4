"""Rules that no module attribute holds, reached by tracing the package's own public functions.

A `custom_jvp`/`custom_vjp`/`custom_vmap` or a `Primitive` made inside a function (a factory, a closure), and a
`pure_callback`/`io_callback`/`ffi_call` or `lax.custom_linear_solve`/`lax.custom_root` call site inside a function,
are invisible to attribute discovery. The package's source is read first (never run) for such sites inside
module-level functions; only when some exist are the public functions that lead to them (the function itself, or
one calling it by name, up to three calls away) traced on inferred inputs, the way a recorded carrier is
(`_record_carrier`): every rule found inside that discovery did not name is checked where the function passes it
its values, a function calling a callback gets the callback checks, and one making custom solves gets the solver
checks (`_checks/_solves.py`). A site left unreached in a function that returns its rule is reached by calling that
function (`_rule_factories`). A site that nothing reaches is reported (JXN010) with what was tried and
why each try failed (JXN012). Inputs here are inferred: findings are graded by `_provenance` (at most a warning,
saying so).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from types import ModuleType
import functools
from collections.abc import Collection
from typing import Any, Sequence

from .. import _compat
from . import _callables, _rule_factories
from ._units import unit_starts
from .._core import _locate
from .._harness.source import called_name
from .._run import _signature
from .._core._report import CheckResult, Location, TargetReport

# Calls that make a rule (or are a callback call site), by the name they are called with.
RULE_MAKERS = {"custom_jvp": "custom_jvp", "custom_vjp": "custom_vjp", "custom_vmap": "custom_vmap",
               "Primitive": "primitive", "pure_callback": "callback", "io_callback": "callback",
               "ffi_call": "callback", "custom_linear_solve": "solve", "custom_root": "solve"}
CALLBACK_PRIMITIVES = ("pure_callback", "io_callback", "ffi_call")
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


def _called_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, (ast.Name, ast.Attribute)) and called_name(func) in ("partial",) and node.args:
            return called_name(node.args[0])  # functools.partial(jax.custom_vjp, nondiff_argnums=...)
        return called_name(func)
    return called_name(node)


def sites_in(module: ModuleType) -> list[Site]:
    """Rule-making calls and decorators inside the module-level functions of `module` (read, never run)."""
    from .._loading._passthrough import module_tree

    tree = module_tree(module)
    path = getattr(module, "__file__", None)
    if tree is None or not path:
        return []
    makers = {**RULE_MAKERS, **_maker_aliases(tree)}
    out: list[Site] = []
    for owner, top in _functions_and_methods(tree):
        last = getattr(top, "end_lineno", None) or top.lineno
        own_decorators = {id(sub) for deco in top.decorator_list for sub in ast.walk(deco)}
        for node in ast.walk(top):
            if id(node) in own_decorators:  # `@custom_jvp def f`: made at import, a module attribute
                continue
            made: list[tuple[int, str]] = []
            if isinstance(node, ast.Call) and node is not top:
                name = _called_name(node)
                if name in makers:
                    made.append((node.lineno, makers[name]))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node is not top:
                for deco in node.decorator_list:
                    name = _called_name(deco)
                    if name in makers:
                        made.append((node.lineno, makers[name]))
            out.extend(Site(module, path, line, kind, owner, top.lineno, last) for line, kind in made)
    unique = {(s.line, s.kind): s for s in out}  # a decorator is also a Call node
    return sorted(unique.values(), key=lambda s: s.line)


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
    from .._loading._passthrough import module_tree

    tree = module_tree(module)
    out: dict[str, set[str]] = {}
    for top in tree.body if tree is not None else []:
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
            calls = [c for c in ast.walk(top) if isinstance(c, ast.Call)]
            named = {called_name(c.func) for c in calls}
            handed = {a.id for c in calls for a in [*c.args, *(k.value for k in c.keywords)]
                      if isinstance(a, ast.Name)}
            out[top.name] = {n for n in named | handed if n}
    return out


def _named_at_import(module: ModuleType) -> set[str]:
    """Every name the module's top-level statements mention or decorate with, class bodies included (calls,
    annotations, values): a class named there may have instances made at import, which hold what its methods
    make."""
    from .._loading._passthrough import module_tree

    tree = module_tree(module)
    out: set[str] = set()
    for top in tree.body if tree is not None else []:
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
    from .._loading._passthrough import module_tree

    tree = module_tree(module)
    out: set[str] = set()
    for top in tree.body if tree is not None else []:
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
    for module in modules:
        sites = sites_in(module)
        done = _covered_sites(sites, covered_at)
        for site in sites:
            cls, _, _ = site.function.rpartition(".")
            # a decorator, factory or class applied as a module is imported made module attributes, which discovery
            # found: a class's instances, or the rules a factory returns; a decorator whose product makes the rule
            # only when called is a plain function, reached by tracing
            if cls in at_import | named or (site.function in at_import and _returns_its_rule(module, site)):
                continue
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
    return result


def _returns_its_rule(module: ModuleType, site: Site) -> bool:
    from .._loading._passthrough import module_tree

    return bool(_rule_factories.returned_sites(module_tree(module), site.function, [site.line]))


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


def check_by_tracing(lint: Any, discovered: list[Any], checked: Sequence[Location] = (),
                     skip: Collection[str] = ()) -> list[TargetReport]:
    """The rules (and callback call sites) inside the walked modules' functions that discovery did not name and no
    recorded call checked (`checked`: their definitions), checked inside the public functions leading to them; the
    sites no function reaches as JXN012 notes. `skip`: units (`_units.unit_starts`) that crashed the process when
    the phase ran before: not run again (the pool reports each crash)."""
    starts = functools.partial(unit_starts, skip=skip)
    modules = [w.module for w in lint.discovery.walked]
    covered = [loc for found in discovered for loc in _rule_locations(found.obj, found.kind)]
    result = plan(modules, covered + list(checked))
    if not result.sites:
        return []
    known = {id(f.obj) for f in discovered}
    # a carrier that is itself a discovered target: the engine checked every rule nested in it already, on that
    # target's own inputs (declared, recorded or inferred); tracing it only tells which sites it reaches
    targets = {id(_locate.unwrap(f.obj)): f for f in discovered}
    reports: list[TargetReport] = []
    tried: list[Tried] = []
    for module, name in result.carriers:
        if all(s.reached for s in result.sites):
            break
        found = targets.get(id(_locate.unwrap(getattr(module, name, None))))
        if starts(f"{module.__name__}:{name}"):
            reports.extend(_through(lint, module, name, result.sites, known, tried, found))
    def note(label: str, outcome: str) -> None:
        tried.append(Tried(label, outcome))

    reports.extend(_rule_factories.check_returned(lint, result.sites, known, note, starts))
    reports.extend(_rule_factories.check_methods(lint, result.sites, known, note, starts))
    reports.extend(_unreached(result.sites, tried, lint))
    return reports


def _through(lint: Any, module: ModuleType, name: str, sites: list[Site], known: set[int], tried: list[Tried],
             found: Any = None) -> list[TargetReport]:
    """Trace one public function on inferred inputs (a discovered target's: its own); check each new rule inside it
    and its callback sites (a discovered target's were checked with it: only the sites it reaches are marked)."""
    from . import _record_carrier
    from .. import _rules as rules
    from .._checks._base import Options
    from .._core._errors import InferenceError, TargetLoadError, UsageError
    from .._loading._inputs import template_text
    from ._record import definition_site

    label = f"{module.__name__}:{name}"
    options = Options(command="check", seed=lint.seed, provenance="inferred", **lint.run_options)
    runs = _record_carrier.runs_of(lint)
    given = lint._inputs_for(found)[0] if found is not None else []
    if given:  # a discovered target's own inputs
        templates = _signature.templates_of_args(given)[0]
        via: dict[str, Any] = {"target": label, "args": [template_text(t) for t in templates]}
    else:
        ran = _inferred_run(lint, runs, module, name, options)
        if isinstance(ran, str):
            tried.append(Tried(label, ran))
            return []
        templates, via, options = ran
    try:
        prepared = _record_carrier.prepare(runs, via, templates, options, lint.app_dir)
    except (InferenceError, TargetLoadError, UsageError) as exc:
        tried.append(Tried(label, f"could not be run ({str(exc).splitlines()[0][:160]})"))
        return []
    # a discovered function target's nested rules and calls were checked with it; a custom_jvp/custom_vjp target is
    # checked as such, never its primal's nested rules (they are checked here, its primal being the carrier)
    checked_with_it = found is not None and found.kind == "function"
    reached_before = sum(s.reached for s in sites)
    reports: list[TargetReport] = []
    for subject in prepared.nested:
        obj = subject.original if subject.original is not None else subject.obj
        if id(obj) in known or not _in_package(subject, lint):
            continue
        where = definition_site(obj, subject.kind)
        _mark(sites, where)
        _mark_made_from(sites, subject.kind, obj)
        if subject.eqn_location is not None:
            _mark(sites, f"{subject.eqn_location.path}:{subject.eqn_location.line}")
        if checked_with_it:  # checked as a nested subject of that target already
            continue
        known.add(id(obj))
        rule_name = obj.name if subject.kind == "primitive" else subject.label.rpartition(" > ")[2]
        call = {"kind": subject.kind, "name": rule_name, "defined_at": where,
                "target": f"{module.__name__}:{rule_name}"}
        inside = _record_carrier.check_inside(runs, via, templates, call, options, lint.app_dir)
        path, _, line = where.rpartition(":")
        anchor = Location(path, int(line), rule_name) if line.isdigit() else None
        for report in inside:
            if via.get("callables"):  # what the rule does depends on jaxdiag's stand-in: every finding says so
                _callables.assume_stand_ins(report, via["callables"], obj, subject.kind)
            report.target = f"{call['target']} (made in a function; inside {label})"
            report.findings.insert(0, rules.INPUTS_INFERRED.finding(
                count=len(templates), specs=" ".join(via["args"]) + f" for {label}{_assumed(via)}, which reaches it",
                location=anchor))
            report.module = module.__name__
            report.config_keys = [call["target"], label]
            report.anchors = [anchor] if anchor else []
        reports.extend(inside)
    callbacks = _callback_lines(prepared)
    for where in callbacks:
        _mark(sites, where)
    if callbacks and not checked_with_it:
        reports.extend(_callback_report(prepared, label, module, options, via))
    solves = _solve_lines(prepared)
    for where in solves:
        _mark(sites, where)
    if solves and not checked_with_it:
        reports.extend(_solve_report(prepared, label, module, options))
    reached = sum(s.reached for s in sites) > reached_before
    tried.append(Tried(label, "" if reached else "traced, but it reaches none of them"))
    return reports


def _inferred_run(lint: Any, runs: Any, module: ModuleType, name: str, options: Any
                  ) -> tuple[list[Any], dict[str, Any], Any] | str:
    """(templates, via, options) to run the public function `name` on: inferred inputs, its required keyword-only
    arguments from the package's call-site literals or the int ladder, stand-ins for the functions it takes
    (`_call_sites.carrier_templates`); else the call its docstring example makes; else why neither runs."""
    from ._call_sites import Assumed, _documented, carrier_templates, keyword_values
    from .._core._errors import InferenceError, TargetLoadError, UsageError
    from .._loading._inputs import template_text

    label = f"{module.__name__}:{name}"
    keywords = keyword_values(module, name)
    if keywords is None:
        reason = "inputs not inferred (a keyword-only argument has no literal at any call site"
    else:
        stand_ins: dict[str, str] = {}
        assumed = sorted(k for k, v in keywords.items() if isinstance(v, Assumed))
        try:
            templates = carrier_templates(label, keywords, lint.app_dir, stand_ins)
        except (InferenceError, TargetLoadError, UsageError) as exc:
            reason = f"inputs not inferred ({str(exc).splitlines()[0][:160]}"
        else:
            return templates, {"target": label, "args": [template_text(t) for t in templates], "keywords": keywords,
                               "callables": stand_ins, "assumed": assumed}, options
    documented = _documented(lint, runs, module, name)
    if isinstance(documented, str):
        return reason + documented + ")"
    _, via, documented_options = documented  # prepared once per run: `_record_carrier.prepare` hands it back
    return list(via["args"]), via, documented_options


def _assumed(via: dict[str, Any]) -> str:
    """What the carrier's run assumed beyond its inferred arrays: keyword-only arguments, stand-in functions, or the
    docstring example its arguments come from (a clause for the JXN001 note)."""
    from ._callables import assumed_text

    if via.get("source"):
        return f" (the call its {via['source']} makes)"
    parts = [f"{k}={v!r}" + (" (assumed)" if k in (via.get("assumed") or ()) else "")
             for k, v in sorted((via.get("keywords") or {}).items())]
    if via.get("callables"):
        parts.append(assumed_text(via["callables"]))
    return f" with {', '.join(parts)}" if parts else ""


def _rule_locations(obj: Any, kind: str) -> list[Location]:
    if kind == "primitive":
        fns = list(_compat.registered_rules(obj).values())
    else:
        fns = [getattr(obj, name, None) for name in ("fun", "fwd", "bwd", "jvp", "vmap_rule")]
    locs = [_locate.locate(fn) for fn in fns if fn is not None and callable(fn)]
    return [loc for loc in locs if loc is not None]


def _in_package(subject: Any, lint: Any) -> bool:
    roots = {w.module.__name__.split(".")[0] for w in lint.discovery.walked}
    fns: list[Any]
    if subject.kind == "primitive":
        fns = [r for r in _compat.registered_rules(subject.obj).values() if r is not None]
    else:
        obj = subject.original if subject.original is not None else subject.obj
        fns = [getattr(obj, "fun", None)]
    modules = {(getattr(_locate.unwrap(f), "__module__", "") or "").split(".")[0] for f in fns if f is not None}
    return bool(modules & roots)


def _mark(sites: list[Site], where: str) -> None:
    path, _, line = where.rpartition(":")
    if not path or not line.isdigit():
        return
    real = os.path.realpath(path)
    for site in sites:
        if os.path.realpath(site.path) == real and site.first <= int(line) <= site.last:
            site.reached = True


def _mark_made_from(sites: list[Site], kind: str, obj: Any) -> None:
    """A custom_* rule made from a module-level function (`custom_jvp(partial(_impl, f))` inside `_make`) is defined
    at that function, outside the site's: the site is reached when it makes a rule of that kind and its function
    names the rule's function."""
    from ._call_sites import references

    fn = _locate.unwrap(getattr(obj, "fun", None))
    name, module_name = getattr(fn, "__name__", None), getattr(fn, "__module__", None)
    if kind == "primitive" or not name:
        return
    for site in sites:
        if site.kind == kind and site.module.__name__ == module_name and not site.reached:
            site.reached = name in references(site.module).get(site.function, set())


def _callback_lines(prepared: Any) -> list[str]:
    """`path:line` of every callback equation in the carrier's trace (its user frame)."""
    from .._harness.cache import SubjectCache
    from .._harness.tracing import trace_function

    traced = trace_function(prepared.root, SubjectCache())
    if traced.value is None:
        return []
    out = []
    for eqn in _compat.iter_eqns(traced.value.jaxpr):
        if getattr(eqn.primitive, "name", "") in CALLBACK_PRIMITIVES:
            where = _compat.eqn_source_line(eqn)
            if where:
                out.append(f"{where[0]}:{where[1]}")
    return out


def _solve_lines(prepared: Any) -> list[str]:
    """`path:line` of every custom_linear_solve / custom_root the carrier makes: the call's own line for a linear
    solve, and the lines of the user's functions it hands either one (f, solve, tangent_solve...)."""
    from .._harness.cache import SubjectCache
    from .._harness.tracing import trace_function

    traced = trace_function(prepared.root, SubjectCache())
    if traced.value is None:
        return []
    out = []
    for eqn in _compat.iter_eqns(traced.value.jaxpr):
        where = _compat.eqn_source_line(eqn) if _compat.is_linear_solve_eqn(eqn) else None
        if where:
            out.append(f"{where[0]}:{where[1]}")
    for call in _compat.solve_calls_in(traced.value.jaxpr, traced.value.custom_calls):
        for closed in call.jaxprs.values():
            src = _compat.jaxpr_source(closed) if closed is not None else None
            if src is not None:
                out.append(f"{src[1]}:{src[2]}")
    return out


def _solve_report(prepared: Any, label: str, module: ModuleType, options: Any) -> list[TargetReport]:
    """The solver checks (`custom-solves`) and the function's gradient against finite differences, on the function
    making custom_linear_solve / custom_root calls, at its inferred inputs."""
    from .._run import _engine
    from .._core import _provenance
    from .._checks import _solves
    from .._harness.cache import SubjectCache

    with _engine.RUN_LOCK, _compat.restored_sys_path():
        report, _ = _engine.run_subject_by_check(prepared.root, options, SubjectCache(),
                                                 only={c.name for c in _solves.CHECKS} | {"function-grad"})
    _provenance.stamp(report.findings, "inferred", prepared.root.input_texts)
    report.target = f"{label} (calls custom_linear_solve / custom_root)"
    report.module = module.__name__
    report.config_keys = [label]
    return [report]


def _callback_report(prepared: Any, label: str, module: ModuleType, options: Any, via: dict[str, Any]
                     ) -> list[TargetReport]:
    """The callback checks (`ffi-vmap-method`) on the function calling them, at its inferred inputs. Run with a
    stand-in function (`_callables`), only the findings that hold whatever the function computes are kept: a callback
    found not batch-aware, or a batch mismatch elsewhere, would describe jaxdiag's stand-in, not the user's code."""
    from .. import _rules as rules
    from .._run import _engine
    from .._core import _provenance
    from .._checks import _ffi
    from .._harness.cache import SubjectCache

    with _engine.RUN_LOCK, _compat.restored_sys_path():
        report, _ = _engine.run_subject_by_check(prepared.root, options, SubjectCache(),
                                                 only={c.name for c in _ffi.CHECKS})
    if via.get("callables"):
        dependent = {rules.FFI_KERNEL_NOT_BATCH_AWARE.code, rules.BATCH_RESULT_MISMATCH.code}
        report.findings = [f for f in report.findings if f.code not in dependent]
        report.findings.insert(0, rules.INPUTS_INFERRED.finding(
            count=len(via["args"]), specs=" ".join(via["args"]) + f" for {label}{_assumed(via)}",
            location=prepared.root.location))
    _provenance.stamp(report.findings, "inferred", prepared.root.input_texts)
    report.target = f"{label} (calls a callback)"
    report.module = module.__name__
    report.config_keys = [label]
    return [report]


def _attempts_for(module_name: str, tried: list[Tried]) -> str:
    """What was tried for a site of `module_name`: its own module's carriers, with why each missed it; the other
    modules' carriers are only counted (listing them for every site reads as if they had been tried for it)."""
    own = [f"{t.carrier}: {t.outcome or 'traced; reaches other rules, not this one'}" for t in tried
           if t.carrier.partition(":")[0] == module_name]
    others = sum(1 for t in tried if t.carrier.partition(":")[0] != module_name)
    parts = own or [f"no public function of {module_name} was traced"]
    if others:
        parts.append(f"{others} public function(s) of other modules were traced, and none reached it")
    return "; ".join(parts)


def _unreached(sites: list[Site], tried: list[Tried], lint: Any) -> list[TargetReport]:
    from .. import _rules as rules

    out = []
    by_function: dict[tuple[str, str], list[Site]] = {}
    for site in sites:
        if not site.reached:
            by_function.setdefault((site.module.__name__, site.function), []).append(site)
    for (module_name, function), group in by_function.items():
        attempts = _attempts_for(module_name, tried)
        first = group[0]
        location = Location(_locate.relative_path(first.path).replace(os.sep, "/"), first.line, function)
        kinds = ", ".join(sorted({s.kind for s in group}))
        lines = ", ".join(str(s.line) for s in group)
        reason = (f"{module_name}:{function} makes or calls {kinds} at line(s) {lines} at run time; no public "
                  f"function traced on inferred inputs reaches it ({attempts})")
        label = f"{module_name}:{function}"
        out.append(TargetReport(label, "function", checks=[CheckResult("reach", "skipped", 0.0, reason)],
                                findings=[rules.TARGET_NOT_CHECKABLE.finding(
                                    reason=reason, fix="Record a call that reaches it (`jaxdiag record -- pytest`) "
                                    "or name a function that calls it with its inputs in [tool.jaxdiag.targets].",
                                    location=location)], module=module_name, config_keys=[label],
                                anchors=[location]))
    return out
