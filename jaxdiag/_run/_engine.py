"""The engine: load a target, choose example inputs, find what to check inside it, run the checks, filter.

`check_batching` and `check_grad` are the public API; the CLI and the pytest plugin call them.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

import jax
import numpy as np

from .. import __version__, _compat
from . import _contain, _signature
from .._core import _locate, _provenance
from .. import _rules as rules
from .._checks import checks_for, lazy_ordered_checks, order_checks
from .._core._commands import FAMILIES
from .._checks._base import Check, Context, Options, SkipCheck, Subject
from .._harness import call_user, catch_abort
from .._harness.cache import SubjectCache
from .._checks._shared import IMPL_OBJECTS, foreign_values, platform_blocker
from .._core._errors import InferenceError, UsageError, dependency_failure, internal_error_detail
from .._core._filtering import Filter, validate_inline
from .._loading._inputs import DOMAINS, PAIRED, ArgSpec, draw, needs_x64, template_leaves
from .._core._report import CheckResult, Finding, Report, TargetReport, register_text_view
from .._loading._targets import Target, classify, describe, load_target


def _text_view(report: Report) -> str:
    """`str(report)`: the text renderer (and rich, which it needs) imported only when a report is printed, not
    by every `check_grad` call that never prints one."""
    from .._render.text import render_plain

    return render_plain(report)


register_text_view(_text_view)

# One run at a time per process (re-entrant: `jaxdiag check` holds it around discovery and the runs inside).
RUN_LOCK = threading.RLock()

# ---------------------------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------------------------


def resolve(target: Any, app_dir: str = ".") -> Target:
    if isinstance(target, Target):
        return target
    if isinstance(target, str):
        return load_target(target, app_dir)
    kind, obj = classify(target)
    return Target(ref=describe(target), obj=obj, kind=kind, module=inspect.getmodule(_locate.unwrap(
        getattr(obj, "fun", None) or obj)))


def run(
    target: Any,
    args: Sequence[Any],
    params: dict[str, Any],
    options: Options,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    app_dir: str = ".",
    per_target_ignore: Sequence[str] | Mapping[str, Sequence[str]] = (),
    allow_unchecked: Mapping[str, str] | None = None,
) -> Report:
    """Load, choose inputs, expand nested subjects, run checks, then filter findings (once, at the end).

    `per_target_ignore` is a `{glob: codes}` table matched against the TARGET string (or a plain list of codes
    for this target). Unknown codes anywhere are a UsageError before any check runs.
    """
    table = per_target_ignore if isinstance(per_target_ignore, Mapping) else (
        {"*": list(per_target_ignore)} if per_target_ignore else {})
    settings = Filter(select, ignore, table, allow_unchecked)
    report = run_unfiltered(target, args, params, options, app_dir)
    settings.apply(report)
    if report.targets:
        notes = [n for n in settings.deprecation_notes() if not settings.deselected(n)]
        report.targets[0].findings.extend(notes)
    return report


def run_unfiltered(target: Any, args: Sequence[Any], params: dict[str, Any], options: Options,
                   app_dir: str = ".") -> Report:
    """Every finding of every check, unfiltered; each target report carries what filtering needs (the names
    configuration may use for it, the lines where an inline suppression covers it). Restores JAX state on exit.

    Not thread-safe by nature (a run patches JAX's global registries and `sys.path`): runs are serialized by
    `RUN_LOCK`, so two threads calling the API get correct reports, one after the other. The user's folders put on
    `sys.path` to load the target stay there for the run only.
    """
    with RUN_LOCK, _compat.run_scope():
        watch = _contain.Watch()
        label = target if isinstance(target, str) else target.ref if isinstance(target, Target) else describe(target)
        with catch_abort() as caught:  # SystemExit & co. from user code while loading or choosing inputs
            report = _run_unfiltered(target, args, params, options, app_dir, watch)
        if caught.abort is not None:
            report = Report([_contain.abort_report(caught.abort, label, "function", f"preparing {label}")],
                            jaxdiag_version=__version__, jax_version=_compat.JAX_VERSION)
        _contain.attach(report.targets, watch.finish(label))
        return report


def _run_unfiltered(target: Any, args: Sequence[Any], params: dict[str, Any], options: Options, app_dir: str,
                    watch: _contain.Watch) -> Report:
    resolved = resolve(target, app_dir)
    watch.loaded()
    module_file = getattr(resolved.module, "__file__", None)
    # a Primitive object's module is JAX's own core.py (its class's): tokenizing it took longer than some checks
    if module_file and module_file.endswith(".py") and _locate.is_user_file(module_file):
        validate_inline(module_file)
    templates, concrete = _signature.templates_of_args(args)
    from .._loading._fit import check_inputs_fit  # only once the target is loaded

    check_inputs_fit(resolved, templates, params, options.in_axes)  # a mismatch is exit 2, never a finding
    specs = [leaf for t in templates for leaf in template_leaves(t) if isinstance(leaf, ArgSpec)]
    # x64 only for an explicitly 64-bit spec (f64, i64, u64, c128), scoped to this run and restored after it:
    # c64 is a 32-bit type and needs no x64, and turning x64 on changes the dtypes the user's rules compute in.
    wide = any(needs_x64(s) for s in specs)
    try:
        with _compat.x64_scope(True) if wide else contextlib.nullcontext():
            reports = _run_target(resolved, templates, concrete, params, options)
    except NeedsX64:  # inferred inputs: the target runs on 64-bit ones only, which need x64 for the whole run
        with _compat.x64_scope(True):
            reports = _run_target(resolved, templates, concrete, params, options)
    if wide and all(c is None for c in concrete):
        from .._checks import _x64_only  # only a run on 64-bit specs asks whether its errors are x64's alone

        if _x64_only.has_variant_errors(reports):
            narrow = _x64_only.narrow_templates(templates)  # the same target on 32-bit specs
            with _compat.x64_scope(False):
                _x64_only.mark_x64_only(reports, _run_target(resolved, narrow, concrete, params, options),
                                        templates, narrow)
    from . import _anchors  # after the checks: not on the import path to the first one (`tests/test_speed_imports.py`)

    anchors = _anchors.suppression_anchors(resolved)
    for report in reports:
        report.anchors = _anchors.with_own_anchors(anchors, report)
        report.config_keys = [resolved.ref]
    final = Report(reports, jaxdiag_version=__version__, jax_version=_compat.JAX_VERSION)
    if options.fixes:  # --diff / --fix: verify candidate edits by re-running this same call on edited copies
        from .. import _fixes

        _fixes.attach(final, resolved, args, params, options, app_dir, run_unfiltered)
    return final


def _run_target(target: Target, templates: list[Any], concrete: list, params: dict, options: Options
                ) -> list[TargetReport]:
    notes: list[Finding] = []
    root = _root_subject(target, params)
    origins: dict[str, str] = {}  # bind params read by following a bind site's variable to its callers
    root.params = {**_signature.bind_site_params(root, origins), **root.params}  # what its own bind calls pass
    given, synthesised = bool(templates), dict[str, Any]()
    ladder = options.command == "check" and bool(_signature.missing_params(root))  # nobody passes them
    if origins or ladder:  # bind params assumed, and said so (JXN017)
        from . import _assumed_params

        if ladder:
            templates, synthesised = _assumed_params.synthesise(
                root, templates, notes, (infer_templates, _try_call), (MissingDependencyError, NeedsX64))
        notes[:0] = _assumed_params.notes(root, synthesised, origins)
    _signature.check_params(root)
    provenance = options.provenance if given and not synthesised else "inferred"  # stamped on each finding below
    if not templates:
        templates = infer_templates(root, notes)
    else:
        _signature.check_arity(root, templates)
    _signature.apply(root, templates)
    specs = root.specs
    choose_domain(root, notes)
    if root.kind == "primitive" or "spd" in {root.domain, *(getattr(s, "domain", None) for s in specs)}:
        from ._contract_tangents import contract_tangents  # the tangents its callers can give (imported if any)

        contract_tangents(root, options.seed)
    root_cache = SubjectCache()
    if any(c is not None for c in concrete):
        rng = np.random.default_rng(options.seed)
        root_cache.example = [np.asarray(c) if c is not None else draw(s, rng, root.domain)
                              for c, s in zip(concrete, specs)]
    subjects = [root]
    if root.kind == "function":  # only a function binds nested rules
        from ._nested import find_nested_subjects

        subjects += find_nested_subjects(root, options, root_cache)
    observed: dict[int, list[np.ndarray]] = {}
    if len(subjects) > 1:  # nested rules are checked as their function calls them: values, perturbation, tracing
        from .._checks._call_site import received_tangents
        from .._checks._call_site import traced_only_primitives
        from .._checks._call_site import unperturbed_inputs
        from ._observe import observed_examples

        observed = observed_examples(root, subjects[1:], options, root_cache)
        example = Context(root, options, "observe", root_cache).example()
        unperturbed = unperturbed_inputs(root, subjects[1:], example)
        traced_only = traced_only_primitives(root, subjects[1:], example)  # never bound eagerly by the function
        received = received_tangents(root, subjects[1:], example, observed, options.seed)
        for subject in subjects[1:]:
            subject.unperturbed = unperturbed.get(id(subject), frozenset())
            subject.traced_only = id(subject) in traced_only
            subject.received_tangents = received.get(id(subject), {})
    reports = []
    given = any(c is not None for c in concrete)
    for subject in subjects:
        cache = root_cache if subject is root else SubjectCache()
        if id(subject) in observed:  # a nested rule is checked at the values its function passes it
            cache.example, cache.observed = observed[id(subject)], True
        subject.provenance = provenance if subject is root else _provenance.nested(provenance, id(subject) in observed)
        report, by_check = run_subject_by_check(subject, options, cache)
        from .._checks._index_range import grade_out_of_range  # after the checks: they need what these retry
        from ._fresh_draws import confirm_on_fresh_draws

        if not (given and subject is root) and id(subject) not in observed:  # given/observed inputs stay as they are
            report.findings = confirm_on_fresh_draws(subject, options, cache, by_check, run_checks)
        report.findings = grade_out_of_range(subject, options, cache, report.findings, by_check, run_checks)
        if subject is root:
            report.findings[:0] = notes
        elif subject.location is not None:  # a nested rule's own definition: its marker and its wrappers' words
            report.anchors = [subject.location]
        _provenance.stamp(report.findings, subject.provenance, subject.input_texts)
        reports.append(report)
    return reports


def _root_subject(target: Target, params: dict) -> Subject:
    obj = target.obj
    if target.kind == "primitive":
        from ._nested import primitive_location

        location = primitive_location(obj, target.module)
    else:
        location = _locate.locate(getattr(obj, "fun", None) or obj)
    if params and target.kind != "primitive":
        raise UsageError(f"--param applies to primitives; {target.ref} is a {target.kind}")
    return Subject(label=target.ref, kind=target.kind, obj=obj, specs=[], params=dict(params), location=location,
                   module=target.module_name)


def _nonfinite(value: Any) -> bool:
    for leaf in jax.tree_util.tree_leaves(value):
        arr = np.asarray(leaf)
        if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
            return True
        if arr.dtype.name == "bfloat16" and not np.all(np.isfinite(arr.astype(np.float32))):
            return True
    return False


def _try_call(subject: Subject, specs: list[ArgSpec], domain: str, seed: int, agree: bool = False,
              failures: list[BaseException] | None = None, mirrored: bool = False) -> tuple[bool, str]:
    """(ran and finite, error text) for one draw of `specs` from `domain` (`agree`: `_assumed_params.disagreement`;
    `mirrored`: every float's sign flipped); `failures` receives the exception the user's code raised."""
    rng = np.random.default_rng(seed)
    args = [draw(s, rng, domain) for s in specs]
    args = [-a if mirrored and s.is_inexact else a for a, s in zip(args, specs)]
    saved = subject.specs
    subject.specs = specs
    if on_check_start is not None:
        on_check_start(subject.label, "", _provenance.inputs_record("inferred", specs))
    try:
        ran = call_user(lambda: jax.block_until_ready(subject.call(*args)))
        traced = call_user(lambda: jax.eval_shape(subject.call, *args)) if agree and ran.error is None else None
    finally:
        subject.specs = saved
    if traced is not None:  # only while assuming bind params: the abstract eval must describe what the impl gave
        from ._assumed_params import disagreement

        why = disagreement(ran.value, traced)
        if why:
            return False, why
    if ran.error is not None:  # the user's code rejected these inputs
        exc = ran.error
        if failures is not None:
            failures.append(exc)
        text = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        if _compat.is_platform_error(exc) and not text.startswith(_MISSING_DEPENDENCY):
            # a kernel that cannot run on this machine: inputs its trace accepts are inputs (its rules are then
            # checked abstractly, `_checks._abstract`)
            traced = call_user(lambda: jax.eval_shape(subject.call, *args))
            if traced.error is None:
                return True, text
        # what even tracing cannot get past: an import failure, also wrapped in the library's own exception, is a
        # missing dependency (JXN011), not inputs that could not be inferred
        missing = dependency_failure(exc)
        if missing:
            return False, missing
        from ._domains import VALUES_ONLY, refused_values

        return False, text + VALUES_ONLY if refused_values(subject, exc, args) else text
    return not _nonfinite(ran.value), "non-finite output"


# (seed, mirrored): the draws a domain must run on before it is kept (`_domains`); "mirrored" flips the sign of every
# float (normal draws only, whose distribution is symmetric)
PROBES = {"normal": ((0, False), (0, True), (1, False)), "other": ((0, False), (1, False), (2, False))}
SLOW_CALL = 0.5  # seconds: a target slower than this is probed on one draw


def choose_domain(subject: Subject, notes: list[Finding]) -> None:
    """Keep normal draws unless the target is non-finite on them or refuses their values (`_domains`); then draw
    from the first domain all of whose probe draws run (failing that, as one draw decided before: normal if its
    first draw ran, else the first domain whose first draw runs) and say so."""
    # a float pinned to a domain decides (the ends of a bound pair follow the run's); an integer's range (an
    # index's) stays whatever the run's domain: only "diagonal" reads it, to place the positions inside it
    if any(s.domain not in (None, *PAIRED) for s in subject.specs if s.is_inexact) or not any(
            s.is_inexact for s in subject.specs):
        return
    normal_first, normal_all, why = _probes_run(subject, "normal", PROBES["normal"])
    if normal_all:
        return
    chosen = None
    for domain in DOMAINS[1:]:
        first, every, _ = _probes_run(subject, domain, PROBES["other"])
        if every:
            chosen = domain
            break
        if first and not normal_first:
            chosen = chosen or domain
    if chosen is None:
        return
    from ._domains import VALUES_ONLY

    subject.domain = chosen
    shown = "gives NaN or inf" if why == "non-finite output" else f"raised {why.removesuffix(VALUES_ONLY)}"
    notes.append(rules.DOMAIN_FALLBACK.finding(
        target=subject.label, why=shown, domain=subject.domain, pinned=subject.specs[0].with_domain(subject.domain),
        location=subject.location))


def _probes_run(subject: Subject, domain: str, probes: tuple[tuple[int, bool], ...]) -> tuple[bool, bool, str]:
    """(the first probe draw ran, every one ran, the first error); a slow call ends the probing with what it
    showed."""
    for k, (seed, mirrored) in enumerate(probes):
        start = time.perf_counter()
        ok, error = _try_call(subject, subject.specs, domain, seed, mirrored=mirrored)
        if not ok:
            return k > 0, False, error
        if time.perf_counter() - start > SLOW_CALL:
            break
    return True, True, ""


def infer_templates(subject: Subject, notes: list[Finding], pairs_early: bool = False, agree: bool = False,
                    sizes: tuple[int, ...] = ()) -> list[Any]:
    """Try a short ladder of float32 shapes for the array positions until the target runs; report it.

    Static positions (nondiff_argnums, static_argnums) take their defaults; one without a default cannot be
    guessed, and neither can a shape contract outside the ladder: both raise InferenceError saying what to pass.
    `pairs_early`: a matrix with a vector is tried before two same-shape matrices (`shape_ladder`); `agree`: see
    `_try_call`; `sizes`: ints its operand shapes may be derived from (`_climb`)."""
    sig = _signature.signature_of(subject)
    keyword_only = [p.name for p in (sig.parameters.values() if sig is not None else ())
                    if p.kind == p.KEYWORD_ONLY and p.default is p.empty]
    if keyword_only and subject.kind != "primitive":
        raise InferenceError(f"could not infer example inputs for {subject.label}: it requires keyword-only "
                             f"argument(s) {', '.join(keyword_only)}, which positional --arg cannot pass; check the "
                             "function that calls it, or record your own calls with `jaxdiag record`",
                             label=subject.label, tried=[], last_error="keyword-only arguments", arity=1)
    from . import _static_values
    from ._climb import _arity, climb_ladder, reverse_refused

    statics = _static_values.static_templates(subject)
    if statics is None:
        needed = _static_values.static_without_default(subject)
        what = "; ".join(f"`{name}` is static ({where})" for name, where in needed)
        raise InferenceError(f"could not infer example inputs for {subject.label}: {what}, and neither a default "
                             "nor its module's own calls give it a value, so none can be drawn; pass a number or "
                             "string as a Python literal (e.g. --arg 0.1), or, for a function or an object, check "
                             "the public function that passes it (or record your calls with `jaxdiag record`)",
                             label=subject.label, tried=[], last_error=what, arity=_arity(subject)[0],
                             static=_static_values.static_suggestions(subject))
    from ._named_axis import under_named_axis

    under_named_axis(subject, [], notes)  # a static axis name: the rule needs that axis throughout
    tried: list[str] = []
    errors: list[str] = []
    operands = _signature.bind_site_operands(subject)
    from ._static_choices import literal_alternatives

    alternatives = list(literal_alternatives(subject, statics))
    traced_only: tuple[list[Any], list[Finding]] | None = None  # inputs on which it only traces, with their note
    for choice in [statics, *alternatives]:
        for dtype in ("f64", "f32") if _compat.x64_enabled() else ("f32",):  # under x64, floats are f64 by default
            noted = len(notes)
            found = climb_ladder(subject, notes, choice, (pairs_early, dtype, operands), tried, errors, agree,
                                 sizes, (_try_call, MissingDependencyError, _MISSING_DEPENDENCY))
            if found is None:
                continue
            if not alternatives or not (_only_traces(subject) or reverse_refused(subject)):
                return found
            # a kernel for another platform (or a bwd that only runs on one): another value of its Literal static
            # or flag may run here (its reference path)
            traced_only = traced_only or (found, notes[noted:])
            del notes[noted:]
            break
    if traced_only is not None:
        _signature.apply(subject, traced_only[0])
        notes.extend(traced_only[1])
        return traced_only[0]
    last_error = errors[-1] if errors else ""
    arity = _arity(subject, operands)[0]
    if not _compat.x64_enabled() and any(_X64_ASKED.search(e) for e in errors):
        raise NeedsX64(f"{subject.label} asks for 64-bit inputs ({next(e for e in errors if _X64_ASKED.search(e))})",
                       label=subject.label, tried=tried, last_error=last_error, arity=arity)
    viewed = under_named_axis(subject, errors, notes)
    if viewed is True:  # collectives over a named axis: run on the devices of one
        return infer_templates(subject, notes, pairs_early, agree, sizes)
    suggestion = " ".join("--arg f32[3]" for _ in range(arity))
    failure = InferenceError(f"could not infer example inputs for {subject.label} (tried {'; '.join(tried[:6])}; "
                             f"last error: {last_error}); pass them explicitly, e.g. {suggestion}",
                             label=subject.label, tried=tried, last_error=last_error, arity=arity)
    failure.skipped = viewed or ""
    raise failure


def _only_traces(subject: Subject) -> bool:
    """Whether the subject, on the inputs just inferred, raises a platform error that tracing gets past (a kernel
    for another platform: its checks are then abstract)."""
    ok, error = _try_call(subject, subject.specs, "normal", 0)
    return ok and error != "non-finite output" and bool(error)


# What a kernel that computes in double precision only says to 32-bit inputs (celerite-style "requires float64
# precision", "expected double", "enable x64"): inference tries 64-bit inputs under x64 then (`NeedsX64`).
_X64_ASKED = re.compile(r"float64|double|\bx64\b|enable_x64|64-bit", re.IGNORECASE)


class NeedsX64(InferenceError):
    """Inference found no 32-bit inputs and the target asked for 64-bit ones: the run is repeated under x64, where
    the ladder tries float64 inputs too."""


_MISSING_DEPENDENCY = ("ModuleNotFoundError", "ImportError")


class MissingDependencyError(InferenceError):
    """The target imports an optional dependency at call time that is not installed: not an inference failure."""

    def __init__(self, label: str, error: str):
        super().__init__(f"{label} could not run: {error} (an optional dependency is missing); install it to "
                         "check this target", label=label, tried=[], last_error=error, arity=0)
        match = re.search(r"No module named '([\w.]+)'", error)
        self.dependency = match.group(1).split(".")[0] if match else error


# ---------------------------------------------------------------------------------------------------------------
# Running checks and filtering findings
# ---------------------------------------------------------------------------------------------------------------

# (subject label, check name, its inputs {"provenance", "specs"}) as each check starts; check "" for each candidate
# inference tries. A worker sets it to tell the parent what runs: a target past the time limit is reported naming
# its check, one whose process died is graded by the inputs it died on (a kernel segfaulting on inferred inputs).
on_check_start: Callable[[str, str, dict[str, Any]], None] | None = None

# The checks a run tries, before `order_checks` orders them from their declarations. None: the families that can
# apply to the subject, each imported on first use (`_checks.checks_for`); a list replaces them (tests run a probe
# check in their place).
ALL_CHECKS: list[Check] | None = None


def _checks_to_run(subject: Subject, options: Options, blocked: str | None, only: Collection[str] | None
                   ) -> Iterator[Check]:
    """The applicable checks (or `only` those named, with what they need) in the order their declarations give."""
    def applies(chk: Check) -> bool:
        return chk.applies(subject, options)

    if blocked:  # a target that cannot run here: only traced, by the abstract checks
        from .._checks import _abstract

        yield from order_checks([c for c in _abstract.CHECKS if applies(c)], only)
    elif ALL_CHECKS is not None:
        yield from order_checks([c for c in ALL_CHECKS if applies(c)], only)
    elif only is not None:  # a retry: every module that may hold one of them or what they need
        yield from order_checks([c for c in checks_for(subject.kind, options) if applies(c)], only)
    else:
        yield from lazy_ordered_checks(subject.kind, options, applies)


def run_subject(subject: Subject, options: Options, cache: SubjectCache | None = None) -> TargetReport:
    return run_subject_by_check(subject, options, cache)[0]


def run_checks(subject: Subject, options: Options, cache: SubjectCache, names: Collection[str]
               ) -> dict[str, list[Finding]]:
    """Only the named checks, as the fresh-draw retries run them: {check name: its findings}. The checks providing
    what they need run first (`order_checks`); their findings were reported on the first draw and are left out."""
    by_check = run_subject_by_check(subject, options, cache, names)[1]
    return {name: findings for name, findings in by_check.items() if name in names}


def run_subject_by_check(subject: Subject, options: Options, cache: SubjectCache | None = None,
                         only: Collection[str] | None = None) -> tuple[TargetReport, dict[str, list[Finding]]]:
    """Every applicable check (or `only` those named, with what they need) on one subject, in the order their
    declarations give (`order_checks`): its report, and each check's findings."""
    cache = SubjectCache() if cache is None else cache
    report = TargetReport(target=subject.label, kind=subject.kind, inputs=subject.input_texts,
                          keywords=subject.keyword_texts, module=subject.module, subject=subject)
    by_check: dict[str, list[Finding]] = {}
    moves: list[tuple[Any, Any]] | None = None  # a helper's wrappers -> the user's rules, once per subject
    blocked = platform_blocker(subject, options, cache)  # a GPU kernel here: its rules are only traced
    foreign = foreign_values(Context(subject, options, "observe", cache))  # its library's own values: no array check
    stopped = False  # user code ended the checks (SystemExit, a custom BaseException)
    for chk in _checks_to_run(subject, options, blocked, only):
        ctx = Context(subject, options, chk.name, cache)
        foreign = foreign or foreign_values(ctx)  # a function's output is known once a check has run it
        if on_check_start is not None:
            on_check_start(subject.label, chk.name,
                           _provenance.inputs_record(subject.provenance or "declared", subject.input_texts))
        start = time.perf_counter()
        findings: list[Finding] = []
        status, detail = "passed", ""
        try:
            with catch_abort() as caught:  # SystemExit & co. from user code: this subject's checks stop here
                if FAMILIES[chk.family].needs_arrays and not subject.specs:
                    raise SkipCheck("no array arguments: nothing to batch")
                if foreign and chk.name not in _NOT_ARRAY_CHECKS[:1 if foreign.startswith(IMPL_OBJECTS) else 2]:
                    raise SkipCheck(f"{foreign}, not arrays")
                from ._confirm import confirmed_findings  # errors stand on XLA's default compiles
                findings = confirmed_findings(chk, ctx)
            if caught.abort is not None:
                findings = [_contain.abort_finding(caught.abort, subject.label,
                                                   f"check `{chk.name}` on {subject.label}")]
                status, detail, stopped = "failed", f"stopped: {caught.abort}", True
            if findings:
                from ._relocate import relocate, wrapper_moves

                moves = wrapper_moves(subject) if moves is None else moves
                findings = relocate(findings, moves)
        except SkipCheck as skip:
            status, detail = "skipped", str(skip)
            findings = list(skip.findings)
            if skip.note:  # a skip the user must hear about (e.g. a defect this JAX release cannot show)
                findings.append(rules.CHECK_SKIPPED.finding(check=chk.name, reason=str(skip), location=skip.location))
        except Exception as exc:  # jaxdiag's own bug: report it, keep checking the rest
            status = "error"
            detail = internal_error_detail(chk.name, exc)
        seconds = time.perf_counter() - start
        if status == "passed" and any(f.severity in ("error", "warning") for f in findings):
            status = "failed"
            detail = "; ".join(sorted({f.code for f in findings}))
        report.checks.append(CheckResult(chk.name, status, seconds, detail, static=chk.static))
        if chk.name in _NOT_ARRAY_CHECKS:  # the impl check ran the impl: what it returns decides the checks after
            foreign = foreign or foreign_values(ctx)
        report.findings.extend(findings)
        by_check.setdefault(chk.name, []).extend(findings)
        if stopped:
            break
    if foreign and subject.kind == "primitive":  # a function's own note is registration-impl's skip
        note = rules.CHECK_SKIPPED.finding(
            check="every lowering, batching and differentiation check",
            reason=f"{subject.obj.name}: {foreign}, a type of its own library, not arrays: an operation of that "
                   "library's own interpreter (a program-capture primitive), which JAX never lowers, batches or "
                   "differentiates", location=subject.location)
        report.findings.insert(0, note)
        by_check = {"not-array-values": [note], **by_check}
    if blocked:
        from .._checks import _abstract

        ran = [c.name for c in report.checks if c.status in ("passed", "failed")]
        note = _abstract.values_not_compared(subject, blocked, ran)
        report.findings.insert(0, note)
        by_check = {"values-not-compared": [note], **by_check}
    if options.show_jaxpr:
        attach_jaxprs(subject, report.findings)
    return report, by_check


# What still applies to a primitive whose values are not arrays (`_shared.foreign_values`): its impl runs, and its
# abstract eval returns its library's own abstract values (when the impl returns its library's objects, the abstract
# eval stands for them in that library's interpreter: nothing compares the two).
_NOT_ARRAY_CHECKS = ("registration-impl", "registration-abstract-eval")


def attach_jaxprs(subject: Subject, findings: list[Finding]) -> None:
    """--show-jaxpr: each error's or warning's jaxpr under the transformation that exposed it (one trace per
    distinct transformation)."""
    from .._evidence import _exposure

    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in subject.specs]
    from .._checks._shared import prim_var

    name = f"{prim_var(subject)}.bind" if subject.kind == "primitive" else subject.name
    marker = subject.obj.name if subject.kind == "primitive" else ""
    texts: dict[Any, str] = {}
    for finding in findings:
        if finding.severity == "info" or not shapes:
            continue
        exposure = _exposure.exposure_for(finding, subject.kind)
        key = repr(exposure)  # out_axes may be a list (unhashable), and a list is not the same as a tuple there
        if key not in texts:
            texts[key] = _exposure.exposing_jaxpr(subject.call, exposure, shapes, name, marker)
        finding.jaxpr = texts[key]
