"""Checking a recorded rule inside the function that carried it (`via` in `.jaxdiag/calls.json`).

A recorded call whose arguments or bind params cannot be written down (a callable, a treedef, a solver object) is
checked by re-running its carrier, the user's module-level function that called it with arrays, and checking the
rule where JAX passes it the real values again. The carrier is only the vehicle: its own checks are not run, and
of the rules met inside it only the one being checked is checked. Two costs are paid once per carrier and
recorded arguments in a run, whatever number of targets it carries (`CarrierRuns`):

- preparing it: tracing it, finding the rules inside it, running it once eagerly to observe the values each rule
  receives (how it calls a rule, which inputs are perturbed and whether only under tracing, is observed for the
  checked rules only);
- each rule's checks, so a rule reached under several names or from several targets is checked once.

A rule bound only under differentiation (a primitive the JVP rule of a custom_jvp binds, as quadax's Leibniz
adjoint binds its tangent primitive) does not appear in the carrier's trace: it is looked for in the trace of
`jax.jvp` of the carrier (of `jax.linearize` when the JVP rule's output is one `jax.jvp` rejects), and one a
transpose rule binds (a reverse primitive) in the trace of its `jax.vjp` pullback; each is checked at the values it
receives there (the rule binding it is `Prepared.bound_by`); when differentiating the carrier as
`jax.grad` does binds it only on tracers (its impl never runs in the user's program), its per-example reference
runs under `jax.jit`, as for any rule bound only under tracing.

The result depends only on the carrier, its recorded arguments, the seed and the rule, never on which target asked
first or which worker process asked, so `-j 1` and `-j N` give the same report.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _compat
from .._core import _locate, _provenance
from .._checks._base import Context, Options, Subject
from .._harness import call_user, jaxdiag_code
from .._harness.budget import OverBudget
from .._harness.cache import SubjectCache
from .._core._errors import InferenceError, TargetLoadError, UsageError
from .._core._report import Finding, TargetReport
from . import _callables
from .._loading._targets import Target


class ObservedValues(dict):
    """The values each rule inside a carrier was observed with, by subject id. Those of a rule found only under
    differentiation are computed on first read (`pending`): a carrier binds many rules there (a library's helper
    primitives in its loops too), and only the recorded one is checked."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.pending: dict[int, Callable[[], list[np.ndarray] | None]] = {}

    def _resolve(self, key: Any) -> None:
        if key in self.pending:
            values = self.pending.pop(key)()
            if values is not None:
                self[key] = values

    def get(self, key: Any, default: Any = None) -> Any:
        self._resolve(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:  # `id(s) in observed` (call-site readers) sees pending values too
        self._resolve(key)
        return super().__contains__(key)

    def __missing__(self, key: Any) -> Any:  # `observed[key]` of a pending value
        self._resolve(key)
        if super().__contains__(key):
            return super().__getitem__(key)
        raise KeyError(key)


@dataclass
class Prepared:
    """A carrier traced and run once: the rules inside it, and the values each was observed with."""

    root: Subject
    nested: list[Subject]
    observed: ObservedValues
    wide: bool  # 64-bit recorded arguments: prepared and checked under x64
    # rules found only under differentiation (filled on first demand), and the values they were observed with
    under_jvp: list[Subject] | None = None
    notes: list[Finding] = field(default_factory=list)
    call_sites_done: set[int] = field(default_factory=set)  # subjects whose call sites were observed
    # a rule found only under differentiation -> the rule binding it ("the transpose rule of foo_jvp"), when known
    bound_by: dict[int, str] = field(default_factory=dict)
    # the carrier's own cache: its example is the values it ran on (a documented call's arrays, never redrawn)
    root_cache: SubjectCache = field(default_factory=SubjectCache)

    def example(self, options: Options) -> list[Any]:
        """The arguments the carrier ran on when it was prepared: every later run of it (observing how it calls
        its rules, its JVP) runs on them too. A documented call's CSR structure redrawn at random made a compiled
        kernel read out of bounds and the worker died."""
        return Context(self.root, options, "observe", self.root_cache).example()


@dataclass
class CarrierRuns:
    """The run-scoped cache of carrier checks: `jaxdiag check` keeps one per process for the whole run."""

    prepared: dict[tuple, Prepared | BaseException] = field(default_factory=dict)
    checked: dict[tuple, TargetReport] = field(default_factory=dict)
    # each public function's docstring-example run (`_call_sites._documented`), by (module, name, x64): its lines
    # are run once per run, however many targets ask where that function calls them
    documented: dict[tuple, Any] = field(default_factory=dict)
    # how many times each carrier was prepared and each rule checked (tests assert each happens once)
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1


def runs_of(lint: Any) -> CarrierRuns:
    """The run's cache, created on first use (the lint object lives as long as the run, in each process)."""
    runs = getattr(lint, "carrier_runs", None)
    if runs is None:
        runs = CarrierRuns()
        lint.carrier_runs = runs
    return runs


def carrier_key(via: dict, options: Options) -> tuple:
    # `source`: where the arguments came from (a docstring's example has its own values behind the same SPECs)
    return (via["target"], tuple(via.get("args") or ()), repr(via.get("ranges")), repr(via.get("keywords")),
            repr(via.get("callables")), via.get("source"), bool(via.get("batched")), options.seed)


def check_inside(runs: CarrierRuns, via: dict, templates: list[Any], call: dict, options: Options, app_dir: str
                 ) -> list[TargetReport]:
    """The reports of the recorded rule `call` checked inside its carrier `via` (run on `templates`, its recorded
    arguments with their domains), one per distinct call of it there, labelled by the caller; [] when the carrier
    does not reach it. Raises what loading the carrier raises."""
    from .._run import _engine

    key = carrier_key(via, options)
    prepared = runs.prepared.get(key)
    if prepared is None:
        try:
            prepared = _prepare(runs, via, templates, options, app_dir)
        except (InferenceError, TargetLoadError, UsageError) as exc:  # every target it holds hears the same reason
            runs.prepared[key] = exc
            raise
        runs.prepared[key] = prepared
    if isinstance(prepared, BaseException):
        raise prepared
    with _scope(prepared), _engine.RUN_LOCK, _compat.run_scope():
        subjects = _the_rule(prepared.nested, call)
        if not subjects and call.get("kind") == "primitive":
            subjects = _the_rule(_jvp_subjects(prepared, options), call)
    return check_subjects(runs, via, prepared, subjects, options)


def check_subjects(runs: CarrierRuns, via: dict, prepared: Prepared, subjects: list[Subject], options: Options
                   ) -> list[TargetReport]:
    """The reports of `subjects`, rules found inside the prepared carrier `via`, each checked once per run where
    the carrier passes it its values."""
    from .._run import _engine

    key = carrier_key(via, options)
    with _scope(prepared), _engine.RUN_LOCK, _compat.run_scope():
        _observe_call_sites(prepared, subjects, options)
        reports = []
        for subject in subjects:
            rule_key = (key, id(subject))
            if rule_key not in runs.checked:
                runs.checked[rule_key] = _check_subject(runs, prepared, subject, options)
            reports.append(_copy(runs.checked[rule_key]))
    return reports


def undescribed(prepared: Prepared, subject: Subject) -> str:
    """Why the values the carrier passed the rule are outside its contract, or "" (also when they were not
    observed): only empty arrays (a check on them compares nothing); a matrix that is not symmetric (Hermitian) where
    the rule's docstring says symmetric or its code hands the operand to `eigh`/`cholesky`; values outside [0, 1] or
    below 0 where its docstring says the operand is in [0, 1] or positive; for a primitive, an
    abstract eval that does not describe what its impl computes there (`_assumed_params.disagreement`; not when the
    impl refuses them: the checks report that)."""
    import jax

    from .._run._assumed_params import disagreement

    with _scope(prepared):
        values = prepared.observed.get(id(subject))
        if values is None:
            return ""
        sizes = [np.size(v) for v in jax.tree_util.tree_leaves(values) if hasattr(v, "shape") and np.ndim(v)]
        if sizes and not any(sizes):  # `cov[:-n, :-n]` with n the whole size: a check on them compares nothing
            return "only empty arrays"
        from .._run._operand_kinds import documented_domains

        domains = documented_domains(subject)  # read once: both readings below judge the values against it
        asymmetric = _asymmetric(subject, values, domains) or _outside_documented(subject, values, domains)
        if asymmetric or subject.kind != "primitive":
            return asymmetric
        ran = call_user(lambda: jax.block_until_ready(subject.call(*values)), quiet=True)
        if ran.error is not None:
            return ""
        return disagreement(ran.value, call_user(lambda: jax.eval_shape(subject.call, *values), quiet=True))


# The values a documented domain admits (`_operand_kinds.documented_domains`): its words, and the test of a value
_DOCUMENTED_RANGES = {"unit": ("outside [0, 1]", "in [0, 1]", lambda v: (v >= 0) & (v <= 1)),
                      "positive": ("below 0", "positive", lambda v: v >= 0)}  # "non-negative" reads as positive


def _outside_documented(subject: Subject, values: Sequence[Any], domains: dict[int, str]) -> str:
    """"with values outside [0, 1] for operand 0 (x: -1.3), which its docstring says are in [0, 1]", or "": the
    caller ran on inferred inputs and handed the rule values its own docstring excludes (a basis defined only on
    [0, 1] given the caller's standard-normal draws, divided by a default scale of 1). `domains`: the subject's
    `_operand_kinds.documented_domains`."""
    from .._run._signature import positional, signature_of

    names = [p.name for p in positional(signature_of(subject))]
    for i, domain in sorted(domains.items()):
        if domain not in _DOCUMENTED_RANGES or i >= len(values):
            continue
        try:
            array = np.asarray(values[i])
        except (TypeError, ValueError):  # a tracer or an object: nothing to judge
            continue
        outside, words, admits = _DOCUMENTED_RANGES[domain]
        if array.size and np.issubdtype(array.dtype, np.floating) and not np.all(admits(array)):
            bad = array[~admits(array)].flat[0]
            name = f" ({names[i]}: {bad:.3g})" if i < len(names) else ""
            return f"with values {outside} for operand {i}{name}, which its docstring says are {words}"
    return ""


def _asymmetric(subject: Subject, values: Sequence[Any], domains: dict[int, str]) -> str:
    """"a non-symmetric f32[4,4] matrix for operand 0, which its own code or docstring says is symmetric", or "".
    `domains`: the subject's `_operand_kinds.documented_domains`."""
    from .._run import _operand_kinds

    symmetric = _operand_kinds.factorised_positions(subject) | {i for i, d in domains.items() if d == "spd"}
    for i in sorted(symmetric):
        try:
            matrix = np.asarray(values[i])
        except (TypeError, ValueError, IndexError):  # no array (or no operand) at i: nothing to judge
            continue
        if (matrix.ndim >= 2 and matrix.shape[-1] == matrix.shape[-2] and matrix.size
                and np.issubdtype(matrix.dtype, np.inexact)
                and not np.allclose(matrix, np.conj(np.swapaxes(matrix, -1, -2)), rtol=1e-4, atol=1e-6)):
            from .._loading._inputs import ArgSpec

            return (f"a non-symmetric {ArgSpec(matrix.dtype, matrix.shape)} matrix for operand {i}, which its own "
                    "code or docstring says is symmetric")
    return ""


def rules_under_jvp(prepared: Prepared, options: Options) -> list[Subject]:
    """The user primitives the carrier binds only when it is differentiated (found once per carrier)."""
    with _scope(prepared):
        return _jvp_subjects(prepared, options)


def prepare(runs: CarrierRuns, via: dict, templates: list[Any], options: Options, app_dir: str,
            example: list[Any] | None = None) -> Prepared:
    """The carrier `via` run on `templates` (at `example`, one concrete array per spec, when given), prepared once
    per run (as `check_inside` prepares it): the rules inside it are `Prepared.nested`. Raises what loading it
    raises, every time it is asked."""
    key = carrier_key(via, options)
    prepared = runs.prepared.get(key)
    if prepared is None:
        try:
            prepared = _prepare(runs, via, templates, options, app_dir, example)
        except (InferenceError, TargetLoadError, UsageError, OverBudget) as exc:  # over budget once, again later
            runs.prepared[key] = exc
            raise
        runs.prepared[key] = prepared
    if isinstance(prepared, BaseException):
        raise prepared
    return prepared


def _copy(report: TargetReport) -> TargetReport:
    """A copy the caller may relabel: every field copied, the live subject (for --repro) shared."""
    from .._core._report import target_report_from_dict, target_report_to_dict

    out = target_report_from_dict(target_report_to_dict(report))
    out.subject = report.subject  # not serialized
    return out


def _scope(prepared: Prepared) -> Any:
    return _compat.x64_scope(True) if prepared.wide else contextlib.nullcontext()


def _prepare(runs: CarrierRuns, via: dict, templates: list[Any], options: Options, app_dir: str,
             example: list[Any] | None = None) -> Prepared:
    """Load the carrier, apply its recorded arguments, find the rules inside it and observe their values (at
    `example` when given: a documented call's own arrays, whose structure random draws would break)."""
    from .._run import _engine, _signature
    from .._run._contract_tangents import contract_tangents
    from .._run._nested import find_nested_subjects
    from .._loading._inputs import ArgSpec, template_leaves
    from .._run._observe import observed_examples

    runs.count(f"prepare {via['target']}")
    with _engine.RUN_LOCK, _compat.run_scope():
        # keyword-only arguments the package's own call sites pass it, stand-ins for the functions it takes
        # (`_call_sites`, `_traced_reach`); a custom_jvp/custom_vjp carrier runs as its primal function
        target = _callables.carrier(_engine.resolve(via["target"], app_dir), via.get("keywords") or {},
                                    via.get("callables") or {})
        if via.get("batched"):  # the carrier under jax.vmap, on templates with a batch axis (`batched_templates`)
            target = Target(target.ref, _under_vmap(target.obj, templates), "function", target.module)
        specs = [leaf for t in templates for leaf in template_leaves(t) if isinstance(leaf, ArgSpec)]
        wide = any(_engine.needs_x64(s) for s in specs)
        if _engine.on_check_start is not None:  # a crash while the carrier runs is graded by the inputs it ran on
            _engine.on_check_start(via["target"], "", _provenance.inputs_record(options.provenance, specs))
        with _compat.x64_scope(True) if wide else contextlib.nullcontext():
            root = _engine._root_subject(target, {})
            _signature.check_arity(root, templates)
            _signature.apply(root, templates)
            notes: list[Finding] = []
            root_cache = SubjectCache()
            if example is not None:  # never run on random draws: they could break the example's structure
                root_cache.example = [np.asarray(x) for x in example]
            else:
                _engine.choose_domain(root, notes)
            contract_tangents(root, options.seed)  # what its nested rules receive stays in the domain
            nested = find_nested_subjects(root, options, root_cache)
            observed = observed_examples(root, nested, options, root_cache) if nested else {}
    return Prepared(root, nested, ObservedValues(observed), wide, notes=notes, root_cache=root_cache)


BATCH = 2  # examples in a batched carrier run


def batched_templates(templates: list[Any]) -> list[Any] | None:
    """`templates` with a batch axis of BATCH in front of every array, the others (statics) unbatched; None when an
    argument mixes arrays and statics in one pytree (its in_axes would have to follow the tree)."""
    from .._loading._inputs import ArgSpec, template_leaves

    out: list[Any] = []
    for template in templates:
        if isinstance(template, ArgSpec):
            out.append(replace(template, shape=(BATCH, *template.shape)))
        elif any(isinstance(leaf, ArgSpec) for leaf in template_leaves(template)):
            return None
        else:
            out.append(template)
    return out


def _under_vmap(fn: Any, templates: list[Any]) -> Any:
    """`fn` under `jax.vmap`, batched along the arguments that are arrays: the rules its own batching rules call (a
    custom_vmap rule calling another custom_vmap on the merged batch) are made only there."""
    import inspect

    import jax

    from .._loading._inputs import ArgSpec

    axes = tuple(0 if isinstance(t, ArgSpec) else None for t in templates)

    def batched(*args: Any) -> Any:
        return jax.vmap(fn, in_axes=axes)(*args)

    # named and located as `fn`, with its signature, but no `__wrapped__`: unwrapping must not drop the vmap
    copied = {attr: getattr(fn, attr, None) for attr in ("__name__", "__qualname__", "__module__", "__doc__")}
    try:
        copied["__signature__"] = inspect.signature(fn)
    except (TypeError, ValueError):
        pass
    for attr, value in copied.items():
        if value is not None or attr == "__doc__":  # a partial has no name to copy: `batched` keeps its own
            setattr(batched, attr, value)
    return batched


def observe_call_sites(prepared: Prepared, subjects: list[Subject], options: Options) -> None:
    """Under the run's lock (and x64 for a wide carrier): see `_observe_call_sites`."""
    from .._run import _engine

    with _scope(prepared), _engine.RUN_LOCK, _compat.run_scope():
        _observe_call_sites(prepared, subjects, options)


def _observe_call_sites(prepared: Prepared, subjects: list[Subject], options: Options) -> None:
    """How the carrier calls the rules about to be checked: the inputs JAX never perturbs there, and whether it
    binds them only under tracing. Each costs runs of the carrier (a `jax.vjp` per input, a jitted run), so only for
    the rules checked, once each."""
    from .._checks._call_site import received_tangents, traced_only_primitives, unperturbed_inputs

    fresh = [s for s in subjects if id(s) not in prepared.call_sites_done and s.parent is prepared.root
             and s not in (prepared.under_jvp or [])]
    if not fresh:
        return
    prepared.call_sites_done.update(id(s) for s in fresh)
    example = prepared.example(options)
    unperturbed = unperturbed_inputs(prepared.root, fresh, example)
    traced_only = traced_only_primitives(prepared.root, fresh, example)
    received = received_tangents(prepared.root, fresh, example, prepared.observed, options.seed)
    for subject in fresh:
        subject.unperturbed = _informative(subject, unperturbed.get(id(subject), frozenset()))
        subject.traced_only = id(subject) in traced_only
        subject.received_tangents = received.get(id(subject), {})


def _informative(subject: Subject, unperturbed: frozenset[int]) -> frozenset[int]:
    """`unperturbed`, unless it holds every floating-point operand: a call that perturbs none (all built from constants
    or integers there, as a function of an integer order builds its matrices) says nothing of which operands the
    rule is differentiated in, and left unperturbed, every derivative check of it would skip, a vacuous "verified".
    Such a call perturbs them all, as where no call was read."""
    floats = {k for k, spec in enumerate(subject.specs) if getattr(spec, "is_inexact", False)}  # keys: uint data
    return frozenset() if floats and floats <= unperturbed else unperturbed


def _the_rule(subjects: list[Subject], call: dict) -> list[Subject]:
    """The subjects that are the recorded rule. Name and definition site can be shared by several rules: a helper
    library's wrapper (equinox's `filter_custom_vjp`) makes every custom_vjp from its own `fn_wrapped`. Then the
    rule is told apart by the name the recording gave it, from the module attribute holding it or its wrapper."""
    from ._record import _name

    candidates = [s for s in subjects if _is_rule(s, call)]
    if len({id(_user_object(s)) for s in candidates}) > 1:
        named = {id(_user_object(s)): _name(_user_object(s), s.kind)[0] for s in candidates}
        candidates = [s for s in candidates if named[id(_user_object(s))] == call.get("target")]
    return candidates


def _user_object(subject: Subject) -> Any:
    """The user's own rule object (a subject with pytree arguments is checked through a flat view of it)."""
    return subject.original if subject.original is not None else subject.obj


def _is_rule(subject: Subject, call: dict) -> bool:
    """Whether a rule found inside the carrier is the recorded one: the same kind and name, and (when both are
    known) defined at the same place."""
    if subject.kind != call.get("kind"):
        return False
    from ._record import definition_site, real_site

    recorded, here = real_site(call.get("defined_at", "")), real_site(definition_site(subject.obj, subject.kind))
    if recorded and here and recorded != here:
        return False
    name = call.get("name") or call.get("target", "").rpartition(":")[2].rpartition(".")[2]
    found = subject.obj.name if subject.kind == "primitive" else subject.label.rpartition(" > ")[2]
    # `g = jax.custom_jvp(f)`: the recording names the attribute `g`, the trace the function `f`; where both sites are
    # known and equal, the site decides (`_the_rule` tells rules sharing one apart by the recorded name)
    return found == name or bool(recorded and here and subject.kind != "primitive")


def _check_subject(runs: CarrierRuns, prepared: Prepared, subject: Subject, options: Options) -> TargetReport:
    from .._run import _engine
    from .._checks._index_range import grade_out_of_range
    from .._run._fresh_draws import confirm_on_fresh_draws

    runs.count(f"check {subject.label}")
    cache = SubjectCache()
    observed = prepared.observed.get(id(subject))
    if observed is not None:  # checked at the values its function passes it, its batches near them (`draw_examples`)
        cache.example, cache.observed = observed, True
    subject.provenance = _provenance.nested(options.provenance, observed is not None)
    report, by_check = _engine.run_subject_by_check(subject, options, cache)
    if observed is None:  # random draws: a finding must hold on fresh ones too
        report.findings = confirm_on_fresh_draws(subject, options, cache, by_check, _engine.run_checks)
    report.findings = grade_out_of_range(subject, options, cache, report.findings, by_check, _engine.run_checks)
    _provenance.stamp(report.findings, subject.provenance, subject.input_texts)
    return report


# ---------------------------------------------------------------------------------------------------------------
# Rules bound only under differentiation
# ---------------------------------------------------------------------------------------------------------------


def _jvp_subjects(prepared: Prepared, options: Options) -> list[Subject]:
    """User primitives that appear only when the carrier is differentiated (bound by a custom_jvp's JVP rule or a
    primitive's JVP rule), found in the trace of `jax.jvp` of the carrier, with the values the eager `jax.jvp`
    passes them. Computed once per carrier."""
    if prepared.under_jvp is not None:
        return prepared.under_jvp
    prepared.under_jvp = []
    import jax

    from .._run._nested import STRUCTURAL_PRIMITIVES, primitive_location, spec_of_aval
    from .._run._observe import primitive_call_key
    from .._core._report import Location

    root = prepared.root
    example = [jax.numpy.asarray(x) for x in prepared.example(options)]
    inexact = [i for i, x in enumerate(example) if jax.numpy.issubdtype(x.dtype, jax.numpy.inexact)]
    if not inexact:
        return prepared.under_jvp

    def along(*moving: Any) -> Any:  # the carrier as a function of its inexact arguments
        args = list(example)
        for i, value in zip(inexact, moving):
            args[i] = value
        return root.call(*args)

    def jvp(*primals: Any) -> Any:
        return jax.jvp(along, primals, primals)  # tangent values do not matter for finding the rules

    def gradient(*primals: Any) -> Any:  # as the user differentiates it: jax.grad's linearize, jit left on
        out, pullback = jax.vjp(along, *primals)
        return pullback(jax.tree_util.tree_map(jax.numpy.ones_like, out))

    def linearized(*primals: Any) -> Any:  # a JVP rule whose output jax.jvp rejects still linearizes
        _, tangent_map = jax.linearize(along, *primals)
        return tangent_map(*primals)

    moving = [example[i] for i in inexact]
    # how the carrier is differentiated, in turn: forward (a JVP rule's binds), else linearized, then in reverse (a
    # transpose rule's binds, reached only there); each traced once, run eagerly only when it shows a new rule
    stages = [jvp, gradient]
    traces = {fn: call_user(lambda fn=fn: jax.make_jaxpr(fn)(*moving)).value for fn in stages}
    if traces[jvp] is None:
        traces[linearized] = call_user(lambda: jax.make_jaxpr(linearized)(*moving)).value
        stages.insert(1, linearized)
    if all(t is None for t in traces.values()):  # the carrier cannot be differentiated: nothing is bound there
        return prepared.under_jvp
    eager: dict[Any, list] = {}

    def eager_binds(fn: Any) -> list:  # the values each rule receives when `fn` runs eagerly
        if fn not in eager:
            eager[fn] = []
            with _compat.record_primitive_binds([], jaxdiag_code, eager[fn]), jax.disable_jit():
                call_user(fn, *moving)
        return eager[fn]

    def operands(fn: Any, eqn: Any) -> list | None:  # what the equation receives, by one compiled program
        if not _compat.reaches_operands(traces[fn], eqn):
            return None
        ran = call_user(lambda: _compat.operands_at(traces[fn], eqn, moving))
        return ran.value if ran.error is None else None

    # operands built from none of the carrier's inputs, along the forward stages (whose tangents are the inputs
    # too): never batched by vmap of the carrier's derivative. Not in reverse, whose cotangent is drawn here as a
    # constant where `jax.jacrev` batches it; nor where the carrier has integer inputs, held fixed in these traces.
    dependence = {fn: _compat.input_dependent_operands(traces[fn]) for fn in (jvp, linearized)
                  if len(inexact) == len(example) and traces.get(fn) is not None}
    made: dict[Any, Subject] = {}
    as_used: list = []  # a rule JAX binds only on tracers when the user differentiates: its impl never runs there
    with _compat.record_primitive_binds([], jaxdiag_code, as_used):
        differentiated = call_user(lambda: jax.block_until_ready(gradient(*moving)))
    known = {primitive_call_key(s.obj, s.params, list(s.specs)) for s in prepared.nested if s.kind == "primitive"}
    eqns = [(eqn, fn) for fn in stages if traces[fn] is not None for eqn in _compat.iter_eqns(traces[fn])]
    user = [eqn.primitive for eqn, _ in eqns if _compat.is_primitive(eqn.primitive)
            and not _compat.is_builtin_primitive(eqn.primitive)]
    for eqn, stage in eqns:
        prim = eqn.primitive
        if not _compat.is_primitive(prim) or _compat.is_builtin_primitive(prim) or prim.name in STRUCTURAL_PRIMITIVES:
            continue
        maybe = [spec_of_aval(v.aval) for v in eqn.invars]
        specs = [s for s in maybe if s is not None]
        key = primitive_call_key(prim, eqn.params, specs)
        constant = frozenset(k for k, dependent in enumerate(dependence[stage](eqn)) if not dependent) \
            if stage in dependence else frozenset()
        if key in made:  # another bind of the same call: constant only where constant in every one
            made[key].unbatched &= constant
        if len(specs) != len(maybe) or key in known:
            continue
        known.add(key)
        where = _compat.eqn_source_line(eqn)
        subject = Subject(
            label=f"{root.label} > {prim.name}", kind="primitive", obj=prim, specs=specs, params=dict(eqn.params),
            location=primitive_location(prim, None), module=root.module, parent=root, domain=root.domain,
            eqn_location=Location(_locate.relative_path(where[0]), where[1], prim.name) if where else None,
            unbatched=constant)
        made[key] = subject
        def observe(stage: Any = stage, eqn: Any = eqn, prim: Any = prim, key: Any = key) -> list | None:
            values = operands(stage, eqn)
            if values is None:  # inside a loop or a branch: the first values the eager run binds it with
                values = next((v for p, params, v in eager_binds(stage) if p is prim and v is not None
                               and primitive_call_key(p, params, [_spec(a) for a in v]) == key), None)
            return None if values is None else [np.asarray(v) for v in values]

        prepared.observed.pending[id(subject)] = observe
        seen = [concrete for p, _, concrete in as_used if p is prim]
        subject.traced_only = (differentiated.error is None or bool(seen)) and all(c is None for c in seen)
        parent = _binding_rule(prim, [s.obj for s in prepared.nested if s.kind == "primitive"] + user)
        if parent is not None:
            prepared.bound_by[id(subject)] = parent
        prepared.under_jvp.append(subject)
    return prepared.under_jvp


def _binding_rule(prim: Any, candidates: list[Any]) -> str | None:
    """"the transpose rule of foo_jvp" when a rule of one of `candidates` (the user primitives around it) holds
    `prim`, the rule that binds it; else None."""
    for parent in dict.fromkeys(candidates):
        for role, held in _compat.rule_bound_primitives(parent):
            if held is prim:
                return f"the {'JVP' if role == 'jvp' else role} rule of {parent.name}"
    return None


def _spec(value: Any) -> Any:
    from .._loading._inputs import spec_of

    return spec_of(value)
