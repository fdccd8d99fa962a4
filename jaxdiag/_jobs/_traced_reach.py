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

import functools
import os
from collections.abc import Collection, Sequence
from types import ModuleType
from typing import Any

from .. import _compat
from . import _callables, _rule_factories
from ._reach_plan import Site, Tried, plan
from ._units import unit_starts
from .._core import _locate
from .._run import _signature
from .._core._report import CheckResult, Location, TargetReport

CALLBACK_PRIMITIVES = ("pure_callback", "io_callback", "ffi_call")

# Other sizes tried, in turn, for every axis of the inferred inputs of a public function leading to a site whose
# inputs reach none: its branch may follow the sizes (an odd size returning early, a size under a threshold taking
# another path). Same ranks, same dtypes: only the branch changes.
OTHER_SIZES = (2, 4)
# keys of one dispatch table tried, in its order (`_through_each_key`)
MAX_TABLE_KEYS = 8


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
        if all(s.reached and not s.per_subclass for s in result.sites):
            break
        found = targets.get(id(_locate.unwrap(getattr(module, name, None))))
        if starts(f"{module.__name__}:{name}"):
            reports.extend(_through(lint, module, name, result.sites, known, tried, found))
    def note(label: str, outcome: str) -> None:
        tried.append(Tried(label, outcome))

    reports.extend(_rule_factories.check_returned(lint, result.sites, known, note, starts))
    reports.extend(_rule_factories.check_methods(lint, result.sites, known, note, starts))
    for module, name in result.makers:  # a private maker nothing public reached: run on its own inferred inputs
        if any(not s.reached for s in result.sites if s.module is module and s.function == name) \
                and starts(f"{module.__name__}:{name}"):
            reports.extend(_through(lint, module, name, result.sites, known, tried, None))
    reports.extend(_unreached(result.sites, tried, lint))
    return reports


def _through(lint: Any, module: ModuleType, name: str, sites: list[Site], known: set[int], tried: list[Tried],
             found: Any = None) -> list[TargetReport]:
    """Trace one public function on inferred inputs (a discovered target's: its own); check each new rule inside it
    and its callback sites (a discovered target's were checked with it: only the sites it reaches are marked).
    Inferred inputs that reach no site are tried again with every axis of each of OTHER_SIZES."""
    from .._loading._inputs import template_text
    from .._run._engine import NeedsX64

    reached_before = sum(s.reached for s in sites)
    try:
        reports, outcome, rung = _through_once(lint, module, name, sites, known, found)
    except NeedsX64:  # a library that refuses to run without x64 (its users enable it): for this function only
        with _compat.x64_scope(True):
            return _through(lint, module, name, sites, known, tried, found)
    for size in OTHER_SIZES if rung is not None else ():
        if reports or sum(s.reached for s in sites) > reached_before:
            break
        assert rung is not None
        templates, via, options = rung
        resized = [_resized(t, size) for t in templates]
        if resized == templates:
            continue
        again = (resized, {**via, "args": [template_text(t) for t in resized]}, options)
        reports, outcome, _ = _through_once(lint, module, name, sites, known, found, again)
    if rung is not None:
        reports += _through_each_key(lint, module, name, sites, known, found, rung)
    tried.append(Tried(f"{module.__name__}:{name}", outcome))
    return reports


def _through_each_key(lint: Any, module: ModuleType, name: str, sites: list[Site], known: set[int], found: Any,
                      rung: tuple[list[Any], dict[str, Any], Any]) -> list[TargetReport]:
    """The function traced again with each key of each table of functions it dispatches through with one of its
    parameters (`_BACKENDS[backend](x)`: `backend=` that key, in the table's order) whose function holds a site
    still unreached: the trace on the parameter's default reaches one member only."""
    from ._reach_plan import table_selectors

    reports: list[TargetReport] = []
    templates, via, options = rung
    for param, entries in table_selectors(module, name):
        for key, member in entries[:MAX_TABLE_KEYS]:
            inside = [s for s in sites if s.module is module and s.function == member]
            if not inside or all(s.reached for s in inside):  # nothing of its own, or reached already
                continue
            again = (templates, {**via, "keywords": {**(via.get("keywords") or {}), param: key}}, options)
            made = _through_once(lint, module, name, sites, known, found, again)[0]
            for report in made:  # which key reached it: the reports would otherwise read the same
                report.target += f" with {param}={key!r}" if isinstance(key, (str, int, float)) else \
                    f" with {param}={key}"
            reports += made
    return reports


def _resized(template: Any, size: int) -> Any:
    import dataclasses

    from .._loading._inputs import ArgSpec

    if not isinstance(template, ArgSpec) or template.key is not None or not template.shape:
        return template
    return dataclasses.replace(template, shape=(size,) * len(template.shape))


def _through_once(lint: Any, module: ModuleType, name: str, sites: list[Site], known: set[int], found: Any,
                  rung: tuple[list[Any], dict[str, Any], Any] | None = None
                  ) -> tuple[list[TargetReport], str, tuple[list[Any], dict[str, Any], Any] | None]:
    """`_through` on one set of inputs (`rung`: given; else a discovered target's own, or inferred): the reports, what
    tracing did ("" when it reached a site) and the inferred inputs it ran on (None when not inferred or not run)."""
    from . import _record_carrier
    from .. import _rules as rules
    from .._checks._base import Options
    from .._core._errors import InferenceError, TargetLoadError, UsageError
    from .._loading._inputs import template_text
    from ._record import definition_site

    label = f"{module.__name__}:{name}"
    options = Options(command="check", seed=lint.seed, provenance="inferred", **lint.run_options)
    runs = _record_carrier.runs_of(lint)
    given = lint._inputs_for(found)[0] if found is not None and rung is None else []
    via: dict[str, Any]
    if given:  # a discovered target's own inputs
        templates = _signature.templates_of_args(given)[0]
        via = {"target": label, "args": [template_text(t) for t in templates]}
    else:
        ran = rung or _inferred_run(lint, runs, module, name, options)
        if isinstance(ran, str):
            return [], ran, None
        templates, via, options = ran
    inferred = None if given or via.get("source") else (templates, via, options)
    try:
        prepared = _record_carrier.prepare(runs, via, templates, options, lint.app_dir)
    except (InferenceError, TargetLoadError, UsageError) as exc:
        return [], f"could not be run ({str(exc).splitlines()[0][:160]})", None
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
                _callables.assume_stand_ins(report, via["callables"], obj, subject.kind, subject)
            report.target = f"{call['target']} (made in a function; inside {label})"
            report.findings.insert(0, rules.INPUTS_INFERRED.finding(
                count=len(templates), specs=" ".join(via["args"]) + f" for {label}{_assumed(via)}, which reaches it",
                location=anchor))
            report.module = module.__name__
            report.config_keys = [call["target"], label]
            report.anchors = [anchor] if anchor else []
        reports.extend(inside)
    callbacks, own = _callback_lines(prepared)
    for where in callbacks:
        _mark(sites, where)
    if own and not checked_with_it:
        reports.extend(_callback_report(prepared, label, module, options, via))
    solves = _solve_lines(prepared)
    for where in solves:
        _mark(sites, where)
    if solves:  # a root's traced functions are f and solve, often written elsewhere: the carrier's own solve site
        for site in sites:  # (`lax.custom_root(partial(f, state), x0, solve, tangent_solve)` in it) ran
            if site.kind == "solve" and site.module is module and site.function == name:
                site.reached = True
    if solves and not checked_with_it:
        reports.extend(_solve_report(prepared, label, module, options, via))
    reached = sum(s.reached for s in sites) > reached_before
    return reports, "" if reached else "traced, but it reaches none of them", inferred


def _inferred_run(lint: Any, runs: Any, module: ModuleType, name: str, options: Any
                  ) -> tuple[list[Any], dict[str, Any], Any] | str:
    """(templates, via, options) to run the public function `name` on: the call its docstring example makes (the
    author's own values, inside the contract); else inferred inputs, its required keyword-only arguments from the
    package's call-site literals or the int ladder, stand-ins for the functions it takes
    (`_call_sites.carrier_templates`); else why neither runs."""
    from ._call_sites import Assumed, _documented, carrier_templates, keyword_values
    from .._core._errors import InferenceError, TargetLoadError, UsageError
    from .._loading._inputs import template_text
    from .._run._engine import NeedsX64

    label = f"{module.__name__}:{name}"
    documented = _documented(lint, runs, module, name)
    if not isinstance(documented, str):
        _, via, documented_options = documented  # prepared once per run: `_record_carrier.prepare` hands it back
        return list(via["args"]), via, documented_options
    keywords = keyword_values(module, name)
    fn = _locate.dotted_attribute(module, name)
    if not _callables.takes_positional(fn) and not _callables.makes_function(fn):
        # nothing to infer: calling it runs its defaults, a library's setup, benchmark or I/O routine (one tuning
        # kernels on a 4 GB problem and saving the winner to disk), not a computation on inputs
        reason = "not run (it takes no positional argument, and a call on its defaults is no inferred input"
    elif keywords is None:
        reason = "inputs not inferred (a keyword-only argument has no literal at any call site"
    else:
        stand_ins: dict[str, str] = {}
        assumed = sorted(k for k, v in keywords.items() if isinstance(v, Assumed))
        try:
            templates = carrier_templates(label, keywords, lint.app_dir, stand_ins)
        except NeedsX64:
            raise  # `_through` runs it again under x64, as the engine does a target
        except (InferenceError, TargetLoadError, UsageError) as exc:
            reason = f"inputs not inferred ({str(exc).splitlines()[0][:160]}"
        else:
            return templates, {"target": label, "args": [template_text(t) for t in templates], "keywords": keywords,
                               "callables": stand_ins, "assumed": assumed}, options
    return reason + documented + ")"


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
    # a closure (`def f` inside the factory) is defined inside its factory, which `_mark` reached: its name, often
    # as plain as `f`, says nothing of the other factories of the module naming a local `f` of their own. What
    # does is the factory calling the site's function, handing it the closure (`lsmr` passing its `_run` to
    # `_lstsq_custom_vjp(_run)`, which makes the rule)
    outer, closure, _ = getattr(fn, "__qualname__", "").partition(".<locals>")
    for site in sites:
        if site.kind == kind and site.module.__name__ == module_name and not site.reached:
            refs = references(site.module)
            site.reached = (site.function in refs.get(outer, set()) if closure
                            else name in refs.get(site.function, set()))


def _callback_lines(prepared: Any) -> tuple[list[str], int]:
    """`path:line` of every callback equation in the carrier's trace (its user frame), and how many of them are
    outside a custom_vmap (one inside is batched by that rule, checked as the custom_vmap it is)."""
    from .._harness.cache import SubjectCache
    from .._harness.tracing import trace_function

    traced = trace_function(prepared.root, SubjectCache())
    if traced.value is None:
        return [], 0
    out, own = [], 0
    ruled = _compat.batched_by_custom_rule(traced.value.jaxpr)
    for eqn in _compat.iter_eqns(traced.value.jaxpr):
        if getattr(eqn.primitive, "name", "") in CALLBACK_PRIMITIVES:
            own += id(eqn) not in ruled
            where = _compat.eqn_source_line(eqn)
            if where:
                out.append(f"{where[0]}:{where[1]}")
    return out, own


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


def _solve_report(prepared: Any, label: str, module: ModuleType, options: Any, via: dict[str, Any]
                  ) -> list[TargetReport]:
    """The solver checks (`custom-solves`) and the function's gradient against finite differences, on the function
    making custom_linear_solve / custom_root calls, at its inferred inputs. Run with stand-in functions (`_callables`:
    an operator, a solver), what depends on what they compute is a note."""
    from .._run import _engine
    from .._core import _provenance
    from .._checks import _solves
    from .._harness.cache import SubjectCache

    with _engine.RUN_LOCK, _compat.run_scope():
        report, _ = _engine.run_subject_by_check(prepared.root, options, SubjectCache(),
                                                 only={c.name for c in _solves.CHECKS} | {"function-grad"})
    if via.get("callables"):
        _callables.assume_solver_stand_ins(report, via["callables"])
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

    with _engine.RUN_LOCK, _compat.run_scope():
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
