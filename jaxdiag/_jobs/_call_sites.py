"""Discovered rules checked where their own package calls them, at the values and bind params the call passes.

Inference draws a rule's inputs from a ladder of small float32 shapes. Three classes of rules are outside what it
can draw, yet the package's own functions pass them what they need:

- bind params built at run time (`kernel(x, outs=[jax.ShapeDtypeStruct(...)])`) that no literal in the source
  holds, so `_passthrough` cannot read them;
- operands of rank 2 or more (a caller passes matrices; a 1-D draw checks the rule outside its contract);
- integer operands (indices, counts): a float draw gives them tangents no program gives them;
- operands every caller stop-gradients (a temperature, a step size): a rule may give them no cotangent.

For such a target the source of the checked modules is read (never run) for public module-level functions that
reach it by name (directly, or up to `MAX_DEPTH` calls away); the nearest are run on their declared inputs, else on
inferred ones, as `_traced_reach` runs them for rules made in factories, and the target is checked where the call
hands it its arguments (`_record_carrier`): observed values and bind params, the operands the caller never perturbs
left unperturbed. A primitive that no module-level function names, bound only by another primitive's JVP or
transpose rule (a factory's reverse primitive), is reached through the functions that call that primitive, and
always checked where the rule binds it (`_record_carrier`: under `jax.jvp` / `jax.grad` of the function). A required
keyword-only argument of such a function is given the literal that the package's own calls
pass it (`transpose=False`). Findings are graded by the caller's inputs (`_provenance`): seen on inferred inputs
when they were inferred, observed when they were declared.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .. import _compat
from .._core import _locate
from .._core._report import TargetReport
from .._harness.budget import OverBudget, time_budget
from .._harness.source import annotation_text

# Public functions tried per target at most (each is traced once per run, whatever number of targets it reaches).
MAX_TRIES = 3
# Calls between a public function and the target, at most.
MAX_DEPTH = 3
# Seconds the search may spend running public functions for one target (a waveform generator run eagerly under vmap
# can compute for minutes): past it the target is checked without them, never left to the per-target limit.
SEARCH_SECONDS = 60.0


@dataclass
class Reach:
    """What the call sites gave for one target: the reports, or why no function got there."""

    reports: list[TargetReport] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)
    # the bind params a call passed where its operands were outside the primitive's contract (`undescribed`): the
    # package's own values, for the primitive's own inference to choose operands with
    params: dict[str, Any] = field(default_factory=dict)


def references(module: ModuleType) -> dict[str, set[str]]:
    """Module-level function name -> every name it calls, hands on as a value, or reaches an attribute through
    (`foo_p.bind(...)`, `kernel.primitive.bind(...)` refer to `foo_p`, `kernel`). A custom_vjp/custom_jvp also
    refers to its rules (`f.defvjp(f_fwd, f_bwd)`, `@f.defjvp`): a primitive bound only in a bwd is reached
    through the public function that calls `f`, under `jax.grad`."""
    from .._harness.source import module_tree

    tree = module_tree(module)
    if id(tree) in _REFERENCES:  # keyed by the parsed tree, itself cached by file and modification time
        return _REFERENCES[id(tree)][1]
    out: dict[str, set[str]] = {}
    for top in tree.body if tree is not None else []:
        if isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names: set[str] = set()
            for node in ast.walk(top):
                if isinstance(node, ast.Name) and node is not top:
                    names.add(node.id)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                    names.add(node.attr)
            out[top.name] = names - {top.name}
        elif (alias := _alias(top)) is not None:  # `_f = jax.jit(f_core, static_argnums=0)`: `_f` calls `f_core`
            out.setdefault(alias[0], set()).update(alias[1])
    for owner, rule in _rule_definitions(tree):
        out.setdefault(owner, set()).add(rule)
    if tree is not None:
        _REFERENCES[id(tree)] = (tree, out)  # the tree is held, so its id is never reused for another
    return out


# Every target's call-site search walks every module of the package: one walk per module and run (a package of 700
# modules with 30 rules took minutes).
_REFERENCES: dict[int, tuple[ast.Module, dict[str, set[str]]]] = {}


def _alias(top: ast.stmt) -> tuple[str, set[str]] | None:
    """(name, the names it refers to) for a module-level name bound to a wrapped function (`_f = jax.jit(g)`,
    `f = partial(g, 2)`, `f = g`): calling the name calls `g`. Only a plain name or a call of one is an alias; a
    literal, a comprehension or an expression computing a value is not."""
    target = top.targets[0] if isinstance(top, ast.Assign) and len(top.targets) == 1 else \
        top.target if isinstance(top, ast.AnnAssign) else None
    value = top.value if isinstance(top, (ast.Assign, ast.AnnAssign)) else None
    if not isinstance(target, ast.Name) or not isinstance(value, (ast.Name, ast.Call)):
        return None
    names = {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(value)
             if isinstance(n, (ast.Name, ast.Attribute))}
    return target.id, names - {target.id}


_DEFINERS = ("defvjp", "defjvp", "defjvps", "def_vmap")


def _rule_definitions(tree: ast.Module | None) -> list[tuple[str, str]]:
    """(custom function, rule function) pairs of the module's top level: `f.defvjp(fwd, bwd)` and
    `@f.defjvp def rule(...)`."""
    pairs: list[tuple[str, str]] = []
    for top in tree.body if tree is not None else []:
        if isinstance(top, ast.Expr) and isinstance(top.value, ast.Call):
            func = top.value.func
            if isinstance(func, ast.Attribute) and func.attr in _DEFINERS and isinstance(func.value, ast.Name):
                pairs += [(func.value.id, a.id) for a in top.value.args if isinstance(a, ast.Name)]
        elif isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in top.decorator_list:
                if isinstance(deco, ast.Attribute) and deco.attr in _DEFINERS and isinstance(deco.value, ast.Name):
                    pairs.append((deco.value.id, top.name))
    return pairs


def carriers(names: set[str], modules: list[ModuleType]) -> list[tuple[ModuleType, str]]:
    """Public module-level functions of `modules` leading to any of `names`, nearest first (a private function on
    the way extends the search but is never run: its arguments are the package's internals)."""
    graph = {id(m): references(m) for m in modules}
    depth_of: dict[tuple[int, str], tuple[int, ModuleType]] = {}
    frontier = set(names)
    for depth in range(1, MAX_DEPTH + 1):
        reached: set[str] = set()
        for module in modules:
            for name, refs in graph[id(module)].items():
                if (id(module), name) not in depth_of and refs & frontier:
                    depth_of[(id(module), name)] = (depth, module)
                    reached.add(name)
        frontier = reached
        if not frontier:
            break
    public = [(depth, module, name) for (_, name), (depth, module) in depth_of.items()
              if not name.startswith("_") and callable(getattr(module, name, None))
              and getattr(_locate.unwrap(getattr(module, name)), "__module__", None) == module.__name__]
    public.sort(key=lambda item: item[0])
    return [(module, name) for _, module, name in public]


def keyword_values(module: ModuleType, name: str) -> dict[str, Any] | None:
    """Literals for the function's required keyword-only arguments, read from the package's own calls of it
    (`name(..., transpose=False)`); one that no call site gives a literal but that takes an int (`L: int`,
    `_int_params.int_kind`) is an `Assumed` int, tried on each rung of the int ladder (`carrier_templates`); None when
    any other has no literal at any call site."""
    from . import _callables
    from .._loading._passthrough import bind_site_params
    from .._run._int_params import int_kind
    from .._run._operand_kinds import is_array_annotation

    fn = getattr(module, name, None)
    try:
        params = inspect.signature(fn).parameters.values() if fn is not None else []
    except (TypeError, ValueError):
        return None
    wanted = {p.name: p for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty}
    if not wanted:
        return {}
    root = module.__name__.split(".")[0]
    package = [m for n, m in sorted(sys.modules.items()) if m is not None and n.split(".")[0] == root]
    found: dict[str, Any] = bind_site_params({name}, package, set(wanted))
    for missing in sorted(set(wanted) - set(found)):
        kind = int_kind(wanted[missing])
        annotation = annotation_text(wanted[missing].annotation)
        if kind is not None:
            found[missing] = Assumed(kind[0])
        elif is_array_annotation(annotation):
            found[missing] = _callables.ArrayKeyword()
        elif annotation == "bool":  # the plain path: a flag off
            found[missing] = False
        else:
            return None
    return found


@dataclass(frozen=True)
class Assumed:
    """A required keyword-only int (or int tuple) argument no call site passes a literal: given the int ladder's
    values in turn (`carrier_templates`)."""

    kind: str


def target_names(found: Any, modules: list[ModuleType]) -> set[str]:
    """The names the package's code may call the target by: its attribute (or its holder's), and every module
    attribute holding it or its holder."""
    names = {found.attr.split(".")[0]}
    held = {id(found.obj)} | ({id(found.holder)} if getattr(found, "holder", None) is not None else set())
    for module in modules:
        for attr, value in list(vars(module).items()):
            if id(value) in held or id(_locate.unwrap(value)) in held:
                names.add(attr)
    return names


def _is_target(subject: Any, found: Any) -> bool:
    obj = subject.original if subject.original is not None else subject.obj
    return obj is found.obj or _locate.unwrap(obj) is found.obj


def differs_from_inference(subject: Any) -> bool:
    """Whether the call site passes what inference would not draw: an integer or boolean operand, or an array of
    rank 2 or more (inference starts from 1-D float32 arrays and stops at the first shape that runs)."""
    return any(not s.is_inexact or len(s.shape) >= 2 for s in subject.specs) or any(
        _is_number(v) for v in subject.static_args.values())


def _is_number(value: Any) -> bool:
    """A Python or NumPy scalar the caller passes as a constant (`power(x, 3)`): inference would draw an array
    there and perturb it, where the caller never does."""
    import numpy as np

    return isinstance(value, (bool, int, float, complex, np.number, np.bool_))


def check_at_call_sites(lint: Any, found: Any, only_if_differs: bool) -> Reach:
    """The target checked at the first call of it that a public function of the package makes, run on inferred
    inputs; with `only_if_differs`, only when that call passes what inference would not draw or leaves an operand
    unperturbed. A primitive that call binds on the caller's own parameters unchanged (a thin public wrapper) gets
    the operands that the wrapper's own callers build from static configuration held fixed
    (`_configured_by_callers`)."""
    from . import _callables, _record_carrier
    from .. import _rules as rules
    from .._run._engine import NeedsX64

    reach = Reach()
    modules = [w.module for w in lint.discovery.walked]
    runs = _record_carrier.runs_of(lint)
    own_rules = {id(_locate.unwrap(getattr(found.obj, a, None))) for a in ("fwd", "bwd", "jvp")}
    # its own fwd or jvp calling the primal is part of the rule, not a caller of it
    callers = [(m, n) for m, n in carriers(target_names(found, modules), modules)
               if id(_locate.unwrap(getattr(m, n, None))) not in own_rules]
    in_rules = found.kind == "primitive" and _compat.is_primitive(getattr(found, "holder", None))
    if not callers and found.kind == "primitive":  # bound only by other primitives' rules: reached through them
        parents = rule_parents(found.obj, modules)
        callers, in_rules = carriers(parents, modules), bool(parents)
    if in_rules:  # checked where the rule binds it, never on made-up operands its contract may not allow
        only_if_differs = False
    search_ends = time.monotonic() + SEARCH_SECONDS
    for module, name in callers[:MAX_TRIES]:
        left = search_ends - time.monotonic()
        try:
            with time_budget(max(left, 0.001)):
                got = _reach_through(lint, found, runs, module, name, reach)
        except OverBudget as over:
            reach.tried.append(f"{module.__name__}:{name}: still running after the search's {SEARCH_SECONDS:g} s "
                               f"({over}): not used")
            return reach
        except NeedsX64:
            # a library that refuses to run without x64 (its users enable it): the caller, and the target where it
            # is called, run under x64, as `_traced_reach` runs such a function
            with _compat.x64_scope(True):
                return check_at_call_sites(lint, found, only_if_differs)
        if got is None:
            continue
        _configured_by_callers(got, module, name, modules)
        subject, prepared, via = got.subject, got.prepared, got.via
        # which operands the caller never perturbs (stop_gradient, integers): checked as unperturbed there
        _record_carrier.observe_call_sites(prepared, [subject], got.options)
        if only_if_differs and not (differs_from_inference(subject) or subject.unperturbed):
            return reach
        reports = _record_carrier.check_subjects(runs, via, prepared, [subject], got.options)
        shown = ", ".join([f"{k}={_short(v)}" + (" (assumed)" if k in got.assumed else "")
                           for k, v in sorted((got.keywords or {}).items())]
                          + ([_callables.assumed_text(via["callables"])] if via.get("callables") else []))
        for report in reports:
            if via.get("callables"):  # what the rule does depends on jaxdiag's stand-in: every finding says so
                _callables.assume_stand_ins(report, via["callables"], found.obj, found.kind, subject)
            report.target = found.label
            report.findings.insert(0, rules.INPUTS_FROM_CALL_SITE.finding(
                carrier=got.label, route=_route(prepared, subject),
                carrier_inputs=(" ".join(via["args"]) or "no arguments") + (
                    f" (the call its {_DOCUMENTED} makes)" if via.get("source") == _DOCUMENTED else ""),
                keywords=f" with {shown}" if shown else "", inputs=" ".join(report.inputs),
                params=_params_text(subject), location=subject.eqn_location or subject.location))
        reach.reports = reports
        return reach
    return reach


@dataclass
class _Reached:
    """A public function that calls the target, prepared on its inputs, and the target's call there."""

    label: str
    prepared: Any
    via: dict
    subject: Any
    options: Any
    keywords: dict[str, Any] | None
    assumed: set[str]


def _configured_by_callers(got: _Reached, module: ModuleType, name: str, modules: list[ModuleType]) -> None:
    """The operands a thin wrapper binds unchanged from its parameters that every call of it in the package builds
    from static configuration (`_configured_operands`): marked `configured` on the call's subject, neither batched nor
    differentiated there, as no use of the package does."""
    from .._run._configured_operands import configured_operands

    subject = got.subject
    if subject.kind == "primitive" and subject.handed_through:
        subject.configured = configured_operands(getattr(module, name, None), subject.handed_through, modules)


def _reach_through(lint: Any, found: Any, runs: Any, module: ModuleType, name: str, reach: Reach
                   ) -> _Reached | None:
    """The public function `name` run on its declared inputs, its docstring example's or inferred ones, and the
    target's call there; None, with the reason in `reach.tried`, when it cannot run or does not call it. Raises
    NeedsX64 when it refuses to run without x64 and x64 is off."""
    from . import _record_carrier
    from .._checks._base import Options
    from .._core._errors import InferenceError, TargetLoadError, UsageError
    from .._loading._inputs import template_text
    from .._run._engine import NeedsX64
    from .._run._signature import templates_of_args

    label = f"{module.__name__}:{name}"
    batchable: list[Any] | None = None  # the caller's inferred templates, when it ran on them
    keywords = keyword_values(module, name)
    given = declared_inputs(lint, module, name)  # the caller's own declared inputs, when there are some
    assumed = {k for k, v in (keywords or {}).items() if isinstance(v, Assumed)}  # ints no call site passes
    if given and assumed:  # declared inputs are run as declared, never beside an assumed int
        keywords, assumed = None, set()
    # the call its docstring example makes comes first: the author's own values, inside the contract
    documented = _documented(lint, runs, module, name) if not given else ""
    if not isinstance(documented, str):
        prepared, via, options = documented
        keywords, assumed = via["keywords"], set()
    elif keywords is None and not given:
        reach.tried.append(f"{label}: a keyword-only argument has no literal at any call site{documented}")
        return None
    else:
        options = Options(command="check", seed=lint.seed, provenance="declared" if given else "inferred",
                          **lint.run_options)
        stand_ins: dict[str, str] = {}
        keywords = dict(keywords or {})  # filled in by the inference: the options its own error asked for too
        try:
            templates = (templates_of_args(given)[0] if given
                         else carrier_templates(label, keywords, lint.app_dir, stand_ins))
            via = {"target": label, "args": [template_text(t) for t in templates], "keywords": keywords,
                   "callables": stand_ins}
            prepared = _record_carrier.prepare(runs, via, templates, options, lint.app_dir)
            batchable = templates
        except (InferenceError, TargetLoadError, UsageError) as exc:
            if isinstance(exc, NeedsX64) and not _compat.x64_enabled():
                raise
            reach.tried.append(f"{label}: {str(exc).splitlines()[0][:160]}{documented}")
            return None
    subjects = [s for s in prepared.nested if _is_target(s, found)]
    if not subjects and found.kind == "primitive":
        subjects = [s for s in _record_carrier.rules_under_jvp(prepared, options) if _is_target(s, found)]
    # under vmap, unless the caller is the rule itself (its primal never calls it: vmap would not either)
    itself = _locate.unwrap(getattr(module, name, None)) is _locate.unwrap(found.obj)
    if not subjects and found.kind != "primitive" and batchable is not None and not itself:
        under = _under_vmap_call(runs, via, batchable, options, lint.app_dir, found)
        if under is not None:
            prepared, via, subjects = under
            label = f"jax.vmap({label})"
    if not subjects and batchable is not None:
        dispatched = _complex_call(getattr(module, name, None), runs, via, batchable, options, lint.app_dir, found)
        if dispatched is not None:  # its complex branch calls it
            prepared, via, subjects = dispatched
    if not subjects:
        reach.tried.append(f"{label}: traced, but it does not call it")
        return None
    subject = subjects[0]
    inferred = not given and via.get("source") != _DOCUMENTED
    drawn = _array_params(subject) if inferred else []
    if drawn:  # a bind param is static: an array there came from the inputs inference drew for the caller
        reach.tried.append(f"{label}: on inferred inputs its call passes bind parameter(s) {', '.join(drawn)} "
                           "an array, where the package passes static values")
        return None
    # the caller's inferred inputs may be outside the rule's contract (real data where it wants complex): where
    # its own description of its output does not hold, its own inference chooses (`_climb`)
    why = _record_carrier.undescribed(prepared, subject) if inferred else ""
    if why:
        reach.tried.append(f"{label}: on inferred inputs it passes operands {why}")
        reach.params = reach.params or dict(subject.params)
        return None
    return _Reached(label, prepared, via, subject, options, keywords, assumed)


_DOCUMENTED = "docstring example"


def _under_vmap_call(runs: Any, via: dict, templates: list[Any], options: Any, app_dir: str, found: Any
                     ) -> tuple[Any, dict, list] | None:
    """(prepared, via, subjects) where `jax.vmap` of the caller calls the target, else None: a rule that only a
    batching rule calls (a custom_vmap rule calling another custom_vmap on the merged batch) is made only there."""
    from . import _record_carrier

    batched = _record_carrier.batched_templates(templates)
    return _calling(runs, {**via, "batched": True}, batched, options, app_dir, found) if batched is not None else None


def _complex_call(caller: Any, runs: Any, via: dict, templates: list[Any], options: Any, app_dir: str, found: Any
                  ) -> tuple[Any, dict, list] | None:
    """(prepared, via, subjects) where the caller run on complex inputs calls the target, else None: a caller whose
    code names a complex dtype dispatches on it, and its complex branch's rules (`solve_c128` beside `solve_f64`)
    are bound only there."""
    from .._run._climb import complex_variant, names_complex

    complexed = complex_variant(templates) if names_complex(caller) else None
    return _calling(runs, via, complexed, options, app_dir, found) if complexed is not None else None


def _calling(runs: Any, via: dict, templates: list[Any], options: Any, app_dir: str, found: Any
             ) -> tuple[Any, dict, list] | None:
    """(prepared, via, subjects): the caller `via` prepared on `templates` instead of its own, and the subjects of
    the target it calls there; None where it fails or calls none."""
    from . import _record_carrier
    from .._core._errors import InferenceError, TargetLoadError, UsageError
    from .._loading._inputs import template_text

    via = {**via, "args": [template_text(t) for t in templates]}
    try:
        prepared = _record_carrier.prepare(runs, via, templates, options, app_dir)
    except (InferenceError, TargetLoadError, UsageError):
        return None
    subjects = [s for s in prepared.nested if _is_target(s, found)]
    return (prepared, via, subjects) if subjects else None


def rule_parents(prim: Any, modules: list[ModuleType]) -> set[str]:
    """Names of the module attributes holding a user primitive whose JVP or transpose rules bind `prim`, directly or
    through primitives of their own (`foo_p`'s JVP rule binds a JVP primitive whose transpose binds `prim`)."""
    names: set[str] = set()
    for module in modules:
        for attr, value in list(vars(module).items()):
            if not _compat.is_primitive(value) or value is prim or _compat.is_builtin_primitive(value):
                continue
            if any(p is prim for p in _compat.rule_reachable_primitives(value)):
                names.add(attr)
    return names


def _route(prepared: Any, subject: Any) -> str:
    """How the carrier reaches a rule bound only under differentiation ("" for one it calls as it runs)."""
    if not any(s is subject for s in prepared.under_jvp or []):
        return ""
    rule = prepared.bound_by.get(id(subject))
    return " under differentiation" + (f", where {rule} binds it" if rule else "")


def _documented(lint: Any, runs: Any, module: ModuleType, name: str) -> tuple[Any, dict, Any] | str:
    """(prepared carrier, via, options) for the public function `name` run on the call its own docstring example
    makes (`_doc_examples`), else the reason there is none (a clause continuing a sentence). Once per run: every
    target asks first, before inferring the caller's inputs."""
    key = (module.__name__, name, _compat.x64_enabled())
    if key not in runs.documented:
        runs.documented[key] = _documented_once(lint, runs, module, name)
    return runs.documented[key]


def _documented_once(lint: Any, runs: Any, module: ModuleType, name: str) -> tuple[Any, dict, Any] | str:
    from . import _doc_examples, _record_carrier
    from .._checks._base import Options
    from .._core._errors import InferenceError, TargetLoadError, UsageError
    from .._loading._inputs import Static, template_text
    from .._run._engine import RUN_LOCK
    from .._run._signature import templates_of_args

    label = f"{module.__name__}:{name}"
    with RUN_LOCK, _compat.run_scope():
        call = _doc_examples.documented_call(module, name)
    if call is None:
        return ", and its docstring has no example that calls it with an array"
    # the example's values are Python values: a string there is a static (`einsum('bk,kn->bn', x, w)`), not a SPEC
    templates, concrete = templates_of_args([Static(a) if isinstance(a, str) else a for a in call.args])
    example = concrete if all(c is not None for c in concrete) else None
    via = {"target": label, "args": [template_text(t) for t in templates], "keywords": call.kwargs,
           "source": _DOCUMENTED}
    # the package author's own call: its values are declared, not drawn
    options = Options(command="check", seed=lint.seed, provenance="declared", **lint.run_options)
    try:
        prepared = _record_carrier.prepare(runs, via, templates, options, lint.app_dir, example)
    except (InferenceError, TargetLoadError, UsageError) as exc:
        return f", and its docstring example's call fails: {str(exc).splitlines()[0][:120]}"
    return prepared, via, options


def declared_inputs(lint: Any, module: ModuleType, name: str) -> list[str] | None:
    """The SPECs declared for the public function `name` (`[tool.jaxdiag.targets]`, else the module's `JAXDIAG`
    dict), or None."""
    keys = [f"{w.label}:{name}" for w in lint.discovery.walked if w.module is module] + [f"{module.__name__}:{name}"]
    for key in keys:
        entry = lint.config.target(key)
        if entry is not None and entry.args:
            return list(entry.args)
    table = getattr(module, "JAXDIAG", None)
    entry = table.get(name) if isinstance(table, dict) else None
    args = entry.get("args") if isinstance(entry, dict) else None
    if isinstance(args, (list, tuple)) and args and all(isinstance(a, str) for a in args):
        return list(args)
    return None


def _array_params(subject: Any) -> list[str]:
    """The bind params of a call that are arrays (a traced or concrete value, never a static one)."""
    import jax
    import numpy as np

    return sorted(k for k, v in subject.params.items() if isinstance(v, (jax.Array, np.ndarray, np.generic)))


def _params_text(subject: Any) -> str:
    if not subject.params:
        return ""
    return " with " + ", ".join(f"{k}={_short(v)}" for k, v in sorted(subject.params.items()))


def _short(value: Any) -> str:
    # an object without a repr of its own shows its address, which changes from run to run: its class instead
    text = re.sub(r"<([\w.]+?\.)?(\w+) object at 0x[0-9a-fA-F]+>", r"<\2>", repr(value))
    return text if len(text) <= 80 else text[:77] + "..."


def carrier_templates(label: str, keywords: dict[str, Any], app_dir: str,
                      stand_ins: dict[str, str] | None = None) -> list[Any]:
    """Inferred inputs for the public function `label`, its keyword-only arguments given `keywords`. Each `Assumed`
    keyword takes the int ladder's values in turn (`_int_params.int_rungs`), the first on which inputs are inferred
    winning; it is replaced by that value in `keywords`. A parameter taking a function is given a stand-in from
    `_callables.LADDER` (the outer ladder); the one that wins goes into `stand_ins`. A custom_jvp/custom_vjp runs as
    its primal function (`_callables.carrier`)."""
    from . import _callables
    from .._core._errors import InferenceError
    from .._run import _engine
    from .._run._int_params import int_rungs

    assumed = {k: v.kind for k, v in keywords.items() if isinstance(v, Assumed)}
    errors: list[str] = []
    with _engine.RUN_LOCK, _compat.run_scope():
        target = _engine.resolve(label, app_dir)
        if not keywords:  # a factory configured by keywords alone: the function it returns is run
            target, _ = _callables.configured(target, {})
        if _callables.unwrapped(target.obj) is target.obj and target.kind != "function":
            raise InferenceError(f"it is a {target.kind}, checked as such", label=label, tried=[],
                                 last_error="not a function", arity=0)
        ladder = _callables.rungs(_callables.unwrapped(target.obj))
        for functions in ladder:
            for r, rung in enumerate(int_rungs(dict(enumerate(assumed.values())))):
                given = {**keywords, **{k: rung[i].value for i, k in enumerate(assumed)}}
                # operand shapes derived from the assumed ints (`_climb`), on the first rung only
                sizes = tuple(given[k] for k in assumed if type(given[k]) is int) if r == 0 else ()
                shown = ", ".join([f"{k}={given[k]!r}" for k in assumed] + [_callables.assumed_text(functions)])
                try:
                    root = _engine._root_subject(_callables.carrier(target, given, functions), {})
                    templates = _engine.infer_templates(root, [], pairs_early=True, sizes=sizes)
                except InferenceError as exc:
                    if (not assumed and len(ladder) == 1) or isinstance(exc, (_engine.MissingDependencyError,
                                                                               _engine.NeedsX64)):
                        raise
                    errors.append(f"{shown.strip(', ')}: {str(exc).splitlines()[0]}")
                    continue
                keywords.update({**given, **root.keywords})  # and what its own error asked for (`_asked_options`)
                if stand_ins is not None:
                    stand_ins.update(functions)
                return templates
    tried = [e[:200] for e in errors]
    what = ", ".join([*assumed, *sorted({n for f in ladder for n in f})])
    raise InferenceError(f"could not infer inputs with the assumed {what} on any rung of the int and function "
                         f"ladders ({'; '.join(tried[:2])})", label=label, tried=tried,
                         last_error=errors[-1] if errors else "", arity=0)
