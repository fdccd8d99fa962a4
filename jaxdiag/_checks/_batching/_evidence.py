"""Running the vmap variants of a subject once: `evidence(ctx)` (cached in `ctx.cache`) runs every variant
under the spy and compares it with the per-example reference; the batching checks only read the `Evidence`.

All variants run first in one compiled program (`_fused`); that run is kept only when it is clean (every variant
agrees with the reference, the spy saw nothing wrong). Otherwise each variant runs on its own, eagerly, with a clean
spy, and every finding comes from those runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import numpy as np

from ... import _compat
from ..._core import _locate
from ..._loading import _numerics
from ... import _rules as rules
from ..._loading._inputs import ArgSpec, choose_batch_size
from .._base import Context, SkipCheck, Subject
from ..._harness import call_user, jaxdiag_code
from .._shared import (
    abstract_output, example_output, first_line, has_jit_path, runs_eagerly, is_user_primitive, reference_fn,
    subject_fn,
)
from .._vmap_harness import Aval, Reference, Variant, axes_variants, vmapped
from ._fused import STATS, fused_runs
from ._spy import RuleCall, Spy, _Abort

# ---------------------------------------------------------------------------------------------------------------
# Running the variants
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    variant: Variant
    leaves: list[np.ndarray] | None = None
    tree: Any = None
    error: BaseException | None = None
    abort: RuleCall | None = None
    comparisons: list[_numerics.Comparison] = field(default_factory=list)
    reference_error: BaseException | None = None
    count_mismatch: tuple[int, int] | None = None
    input_shapes: list[tuple[int, ...]] = field(default_factory=list)
    call: tuple[Callable, list[Any]] | None = None  # what ran: the vmapped function and its arguments

    @property
    def mismatched(self) -> list[int]:
        return [k for k, c in enumerate(self.comparisons) if not c.ok and not c.nonfinite]

    @property
    def ok(self) -> bool:
        return (self.error is None and self.abort is None and self.count_mismatch is None
                and not self.mismatched)


@dataclass
class Evidence:
    """Every vmap run of one subject, the rule calls the spy saw, and the reference they were compared with."""

    subject: Subject
    fn: Callable
    reference: Reference
    outcomes: list[Outcome]
    calls: list[RuleCall]
    spied: list[Any]
    expected_at_subject: list[Aval] | None
    notes: list[str] = field(default_factory=list)


# The shared state collecting the evidence reads, so every check calling `evidence` declares it (`@check(reads=)`):
# whichever of them runs first collects it, after registration-lowering said whether jax.jit of the primitive works.
EVIDENCE_READS = ("jit_broken",)


def evidence(ctx: Context) -> Evidence:
    """Run every variant once (cached for all batching checks of the subject)."""
    cached = ctx.cache.batching_evidence
    if isinstance(cached, Evidence):
        return cached
    if isinstance(cached, SkipCheck):
        raise cached
    try:
        result = _collect(ctx)
    except SkipCheck as skip:
        ctx.cache.batching_evidence = skip
        raise
    ctx.cache.batching_evidence = result
    return result


def _collect(ctx: Context) -> Evidence:
    subject = ctx.subject
    if subject.kind == "primitive" and not _compat.has_batching_rule(subject.obj):
        raise SkipCheck(f"{subject.obj.name} has no batching rule ({rules.MISSING_BATCHING_RULE.code})")
    out = example_output(ctx)
    if out.leaves is None:
        raise SkipCheck(f"{subject.name} raised on the example ({rules.TARGET_RAISED.code}): {first_line(out.error)}"
                        if out.error is not None else "no reference")
    fn = reference_fn(subject)
    assert fn is not None
    shapes = [s.shape for s in ctx.specs] + [tuple(x.shape) for x in out.leaves]
    size = ctx.batch_size([tuple(x.shape) for x in out.leaves])
    outer = choose_batch_size(shapes, start=2)
    inner = choose_batch_size(shapes + [(outer,)], start=outer + 1)
    wide = _wide_batch_size(ctx.specs)
    reference = Reference.drawn(ctx, fn, max(size, outer * inner, wide or 0))
    expected_at_subject = _subject_avals(ctx)
    spied = _spied_primitives(ctx)
    trust = _abstract_eval_agrees(ctx)
    target = subject_fn(subject)
    notes: list[str] = []
    variants = _variants(ctx, size, outer, inner, notes, wide)
    spy = Spy(subject, expected_at_subject, trust_abstract_eval=trust)
    outcomes = _fused(target, reference, spy, spied, variants)
    if outcomes is None:  # a fresh spy: no call of the fused trace is evidence
        spy = Spy(subject, expected_at_subject, trust_abstract_eval=trust)
        outcomes = []
        for variant in variants:
            twin = next((o for o in outcomes if o.variant.mode == "jit(vmap)"), None) \
                if variant.mode == "vmap(jit)" else None
            outcomes.append(_run(target, reference, spy, spied, variant, twin))
    for variant in _each_alone(ctx, outcomes, spy, size):
        outcomes.append(_run(target, reference, spy, spied, variant))
    return Evidence(subject, target, reference, outcomes, spy.calls, spied, expected_at_subject, notes)


def _each_alone(ctx: Context, outcomes: list[Outcome], spy: Spy, size: int) -> list[Variant]:
    """Where the subject's own rule refused every variant: the leading operands batched and the rest not, then each
    operand batched alone. A kernel that batches its data but refuses per-example weights (operands conventionally
    after the data) refused every variant that batches several operands at once; what it accepts is then its
    contract (a JXN020 note), and a rule that refuses these too refuses every batched call (JXB014)."""
    n = len(ctx.specs)
    refused = any(c.error is not None for c in spy.calls if c.prim is ctx.subject.obj)
    if n < 2 or not refused or any(o.ok or (o.error is None and o.abort is None) for o in outcomes
                                   if o.variant.mode != "constants"):
        return []
    leading = [tuple(0 if j < k else None for j in range(n)) for k in range(n - 1, 0, -1)]
    alone = [tuple(0 if j == i else None for j in range(n)) for i in range(n)]
    tried = {o.variant.axes for o in outcomes}
    never = ctx.subject.never_batched
    out: list[Variant] = []
    for axes in leading + alone:
        axes = tuple(None if i in never else a for i, a in enumerate(axes))
        if any(a is not None for a in axes) and axes not in tried:
            tried.add(axes)
            out.append(Variant(axes, size))
    return out[:_AFTER_REFUSALS_MAX]


_AFTER_REFUSALS_MAX = 16  # runs at most: a rule refusing them raises as it is traced, one that accepts compiles each


def _fused(fn: Callable, reference: Reference, spy: Spy, spied: list[Any], variants: list[Variant]
           ) -> list[Outcome] | None:
    """Every variant's outcome from the one fused program, or None (the eager runs decide) unless every variant
    agrees with the reference and the spy saw nothing wrong."""
    runs = fused_runs(fn, reference, spy, spied, variants)
    outcomes = []
    for run in runs or []:
        outcome = Outcome(run.variant, leaves=run.leaves, tree=run.tree, call=(vmapped(fn, run.variant), run.args),
                          input_shapes=[tuple(np.shape(a)) for a in run.args])
        _compare(outcome, run.expected)
        outcomes.append(outcome)
    if runs is None or not all(o.ok for o in outcomes):
        STATS["fallback"] += 1
        return None
    STATS["fused"] += 1
    return outcomes


def _subject_avals(ctx: Context) -> list[Aval] | None:
    out = example_output(ctx)
    if ctx.subject.kind != "primitive":
        return None
    if out.leaves is not None and not out.via_jit:
        return out.avals
    return abstract_output(ctx).avals


def _abstract_eval_agrees(ctx: Context) -> bool:
    if ctx.subject.kind != "primitive":
        return True
    avals, out = abstract_output(ctx).avals, example_output(ctx)
    return avals is not None and (out.via_jit or avals == out.avals)


def _spied_primitives(ctx: Context) -> list[Any]:
    if ctx.subject.kind == "primitive":
        return [ctx.subject.obj]
    prims = list(_compat.user_batching_primitives())
    for nested in ctx.cache.nested_subjects:
        if nested.kind == "primitive" and nested.obj not in prims and is_user_primitive(nested):
            prims.append(nested.obj)
    return prims


def _wide_batch_size(specs: Sequence[ArgSpec]) -> int | None:
    """A batch size beyond the range of the 8-bit integer inputs (150 for int8, 300 for uint8): a rule that builds
    batch indices in the input's dtype (an int8 iota) is exact for small batches and wraps around beyond it."""
    sizes = [150 if s.dtype == np.int8 else 300 for s in specs if s.dtype in (np.int8, np.uint8)]
    return max(sizes) if sizes else None


def _variants(ctx: Context, size: int, outer: int, inner: int, notes: list[str], wide: int | None = None
              ) -> list[Variant]:
    """Every variant to run; a nested primitive's operands that its function never batches stay unbatched in all."""
    out = _every_variant(ctx, size, outer, inner, notes, wide)
    unbatched = ctx.subject.never_batched
    if not unbatched:
        return out
    kept: list[Variant] = []
    for variant in out:
        if variant.mode != "constants":
            axes = tuple(None if i in unbatched else a for i, a in enumerate(variant.axes))
            if all(a is None for a in axes):
                continue
            variant = replace(variant, axes=axes)
        if variant not in kept:
            kept.append(variant)
    if not any(v.mode != "constants" for v in kept):
        raise SkipCheck("no operand of this call depends on the function's inputs: vmap of the function never "
                        "batches it")
    constant = ", ".join(f"#{i}" for i in sorted(ctx.subject.unbatched))
    configured = ", ".join(f"#{i}" for i in sorted(ctx.subject.configured - ctx.subject.unbatched))
    if constant:
        notes.append(f"variants batching operand(s) {constant} skipped: they depend on none of the function's "
                     "inputs, so vmap of the function never batches them")
    if configured:
        notes.append(f"variants batching operand(s) {configured} skipped: the function hands them on from its "
                     "parameters, and every call of it in the package builds them from static configuration (int, "
                     "str or bool settings), so no use of the package batches them")
    return kept


def _every_variant(ctx: Context, size: int, outer: int, inner: int, notes: list[str], wide: int | None = None
                   ) -> list[Variant]:
    specs = ctx.specs
    out = []
    user = _user_variant(ctx, size)
    if user is not None:
        out.append(user)
    out += [Variant(axes, size) for axes in axes_variants(specs)]
    zeros = tuple(0 for _ in specs)
    if size != 1:
        out.append(Variant(zeros, 1))
    if wide is not None:
        out.append(Variant(zeros, wide))
    if ctx.subject.kind == "primitive" and not runs_eagerly(ctx.subject):
        why = ("bound only under tracing by your code" if _compat.has_impl(ctx.subject.obj)
               else f"no impl ({rules.MISSING_IMPL.code})")
        notes.append(f"{why}: every variant ran under jax.jit; nested vmap skipped")
        return [replace(v, under_jit=True) for v in out]
    out.append(Variant(tuple(len(s.shape) for s in specs), outer, mode="nested", inner=inner))
    if ctx.subject.kind == "primitive" and _compat.batching_rule_is_fancy(ctx.subject.obj) and _locate.is_user_code(
            _compat.batching_rule(ctx.subject.obj)):
        # JAX calls rules registered in the fancy table even when no input is batched
        out.append(Variant(tuple(None for _ in specs), size, mode="constants"))
    if _can_jit(ctx, notes):
        out.append(Variant(zeros, size, mode="jit(vmap)"))
        out.append(Variant(zeros, size, mode="vmap(jit)"))
    return out


def _user_variant(ctx: Context, size: int) -> Variant | None:
    in_axes, out_axes = ctx.options.in_axes, ctx.options.out_axes
    if in_axes is None and out_axes is None:
        return None
    n = len(ctx.specs)
    given = 0 if in_axes is None else in_axes
    if isinstance(given, (tuple, list)):
        per = list(given) + [0] * (n - len(given))
    else:
        per = [given] * n
    axes = []
    for a, spec in zip(per[:n], ctx.specs):
        rank = len(spec.shape) + 1
        axes.append(a % rank if isinstance(a, int) and -rank <= a < rank else (0 if a is not None else None))
    return Variant(tuple(axes), size, mode="user", out_axes=0 if out_axes is None else out_axes, user_in_axes=given)


def _can_jit(ctx: Context, notes: list[str]) -> bool:
    subject = ctx.subject
    if subject.kind == "primitive":
        prim = subject.obj
        if not has_jit_path(prim):
            notes.append("jit(vmap) and vmap(jit) skipped: no abstract eval or no lowering "
                         f"({rules.MISSING_ABSTRACT_EVAL.code}/{rules.MISSING_LOWERING.code})")
            return False
        avals = abstract_output(ctx).avals
        if ctx.cache.jit_broken or avals is None or (
                not example_output(ctx).via_jit and [a for a, _ in avals] != [a for a, _ in example_output(ctx).avals]):
            notes.append("jit(vmap) and vmap(jit) skipped: jax.jit of the primitive itself fails "
                         f"({rules.ABSTRACT_EVAL_MISMATCH.code}/{rules.LOWERING_MISMATCH.code})")
            return False
        return True
    if ctx.cache.jaxpr is None:
        notes.append("jit(vmap) and vmap(jit) skipped: the function cannot be traced with make_jaxpr")
        return False
    for eqn in _compat.iter_eqns(ctx.cache.jaxpr):
        prim = eqn.primitive
        if _compat.is_primitive(prim) and not _compat.is_builtin_primitive(prim) and not has_jit_path(prim):
            notes.append(f"jit(vmap) and vmap(jit) skipped: {prim.name} has no abstract eval or no lowering")
            return False
    return True


def _run(fn: Callable, reference: Reference, spy: Spy, spied: list[Any], variant: Variant,
         twin: Outcome | None = None) -> Outcome:
    """Run one variant under the spy and compare it with the reference. `twin` (the jit(vmap) outcome, for
    vmap(jit)): when vmap(jit) traces to the very program jit(vmap) ran on the same arrays, its result is reused
    instead of compiled a second time (the rule still runs, under the spy, while it is traced)."""
    outcome = Outcome(variant)
    expected = reference.expected(variant)
    if isinstance(expected, BaseException):
        outcome.reference_error = expected
        return outcome
    spy.variant = variant
    args = reference.batched_args(variant)
    if variant.mode == "constants":
        args = [np.zeros((variant.size,), np.float32), *args]
    outcome.input_shapes = [tuple(np.shape(a)) for a in args]
    call = vmapped(fn, variant)
    outcome.call = (call, args)
    reuse = _reusable(twin, args)

    def run_vmapped() -> Any:
        if reuse is not None and _compat.same_program_as_jit(reuse[0], call, args):
            return reuse[1]
        result = call(*args)
        jax.block_until_ready(result)
        return result

    with _compat.intercept_batching_rules(spy.handlers(spied), guard=jaxdiag_code):
        try:
            ran = call_user(run_vmapped)
        except _Abort as abort:  # the spy recorded a malformed return (or a rule that raised) and stopped vmap
            outcome.abort = abort.call
            return outcome
    if ran.error is not None:
        outcome.error = ran.error
        return outcome
    result = ran.value
    leaves, outcome.tree = jax.tree_util.tree_flatten(result)
    outcome.leaves = [np.asarray(x) for x in leaves]
    _compare(outcome, expected)
    return outcome


def _reusable(twin: Outcome | None, args: list[Any]) -> tuple[Callable, Any] | None:
    """(the twin's jitted function, its result) when the twin ran cleanly on the same arrays."""
    if twin is None or twin.call is None or twin.leaves is None or not twin.ok:
        return None
    call, twin_args = twin.call
    same = len(args) == len(twin_args) and all(
        np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
        and np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(args, twin_args))
    return (call, jax.tree_util.tree_unflatten(twin.tree, twin.leaves)) if same else None


def _compare(outcome: Outcome, expected: list[np.ndarray]) -> None:
    leaves = outcome.leaves or []
    if len(leaves) != len(expected):
        outcome.count_mismatch = (len(leaves), len(expected))
        return
    axes = _per_leaf(outcome.variant.out_axes, outcome.tree, len(leaves))
    for leaf, want, axis in zip(leaves, expected, axes):
        if axis is None:
            got = np.broadcast_to(leaf, want.shape) if leaf.shape == want.shape[1:] else leaf
        elif outcome.variant.mode == "nested" or not -leaf.ndim <= axis < max(leaf.ndim, 1):
            got = leaf
        else:
            got = np.moveaxis(leaf, axis, 0) if leaf.ndim else leaf
        outcome.comparisons.append(_numerics.compare(got, want))


def _per_leaf(out_axes: Any, tree: Any, count: int) -> list[Any]:
    """out_axes broadcast to one entry per output leaf (a tree prefix, as vmap reads it)."""
    if out_axes is None or isinstance(out_axes, int):
        return [out_axes] * count
    try:
        treedef = tree if tree is not None else None
        template = jax.tree_util.tree_unflatten(treedef, list(range(count)))
        per = [None] * count

        def fill(axis: Any, sub: Any) -> None:
            for index in jax.tree_util.tree_leaves(sub):
                per[index] = axis

        jax.tree_util.tree_map(fill, out_axes, template, is_leaf=lambda x: x is None)
        return per
    except (ValueError, TypeError, AttributeError, IndexError):  # out_axes is not a prefix of the outputs
        return [0] * count
