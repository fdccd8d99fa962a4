"""Abstract checks: the rules of a target that cannot run on this platform (a GPU kernel on a CPU-only machine).

A Pallas/Triton kernel, or a primitive whose only lowerings are for `cuda`/`rocm`/`tpu`, raises as soon as it is
run here, so no per-example value can be computed. Its rules still can be traced: the abstract eval, the batching
rule under `jax.eval_shape(jax.vmap(...))` for every in_axes variant (through the same rule spy as the value
checks, so a malformed return gets its normal JXB code), the JVP rule's tangent avals and the transpose rule's (or a
custom_vjp bwd's) cotangent avals under `jax.eval_shape` of `jax.jvp` / `jax.vjp`. Nothing runs a kernel; values
are not compared, which the one JXN013 note per target says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jax
import numpy as np

from .. import _compat
from .. import _rules as rules
from .._loading._inputs import choose_batch_size
from .._core._report import Finding
from ._base import Check, Context, SkipCheck, Subject, check
from ._batching._evidence import Evidence, Outcome
from ._batching._rule_returns import rule_returns_check
from ._batching._spy import Spy, _Abort
from .._harness import call_user, jaxdiag_code
from ._vmap_harness import Reference, Variant, axes_variants, vmapped
from ._registration import abstract_eval_check
from ._shared import (abstract_output, aval_text, first_line, raises_on_purpose, removed_api, removed_api_finding,
                      rule_location, subject_fn, tangent_dtype_accepted, user_frame_location)

# ---------------------------------------------------------------------------------------------------------------
# Can the target run here?
# ---------------------------------------------------------------------------------------------------------------


def values_not_compared(subject: Subject, reason: str, ran: list[str]) -> Finding:
    return rules.VALUES_NOT_COMPARED.finding(target=subject.label, reason=reason,
                                             checks=", ".join(ran) or "none", location=subject.location)


# ---------------------------------------------------------------------------------------------------------------
# Batching: every in_axes variant under jax.eval_shape, through the rule spy
# ---------------------------------------------------------------------------------------------------------------


class _NoValues(Exception):
    """What an abstract reference returns for per-example values: there are none."""


class _AbstractReference(Reference):
    """A reference without values: value-based measures (constant outputs, the true batch axis) are unknown."""

    def outputs(self, pattern: frozenset[int], count: int) -> list[list[np.ndarray]] | BaseException:
        return _NoValues("values are not computed on this platform")

    def constant(self, pattern: frozenset[int], k: int, count: int) -> bool | None:
        return None


def _shapes(ctx: Context, variant: Variant) -> list[jax.ShapeDtypeStruct]:
    out = []
    for spec, axis in zip(ctx.specs, variant.axes):
        shape = tuple(spec.shape)
        if axis is not None:
            shape = shape[:axis] + (variant.size,) + shape[axis:]
        out.append(jax.ShapeDtypeStruct(shape, spec.dtype))
    return out


def abstract_evidence(ctx: Context) -> Evidence:
    """The batching evidence of `_batching._evidence`, obtained by tracing: each variant's vmap under
    `jax.eval_shape` with the spy validating every return of the rule against the per-example abstract eval."""
    subject, prim = ctx.subject, ctx.subject.obj
    if not _compat.has_batching_rule(prim):
        raise SkipCheck(f"{prim.name} has no batching rule ({rules.MISSING_BATCHING_RULE.code})")
    expected = abstract_output(ctx).avals
    if expected is None:
        raise SkipCheck(f"{prim.name}'s abstract eval gives no output avals to batch against")
    size = choose_batch_size([s.shape for s in ctx.specs] + [tuple(a) for a, _ in expected])
    fn = subject_fn(subject)
    spy = Spy(subject, expected, trust_abstract_eval=True)
    reference = _AbstractReference(subject, fn, [], 0)
    outcomes = []
    for axes in axes_variants(ctx.specs):
        variant = Variant(axes, size)
        outcome = Outcome(variant)
        spy.variant = variant
        shapes = _shapes(ctx, variant)
        outcome.input_shapes = [tuple(s.shape) for s in shapes]
        with _compat.intercept_batching_rules(spy.handlers([prim]), guard=jaxdiag_code):
            try:
                ran = call_user(jax.eval_shape, vmapped(fn, variant), *shapes)
            except _Abort as abort:
                outcome.abort = abort.call
                outcomes.append(outcome)
                continue
        if ran.error is not None:
            outcome.error = ran.error
        else:
            outcome.tree = jax.tree_util.tree_structure(ran.value)
        outcomes.append(outcome)
    return Evidence(subject, fn, reference, outcomes, spy.calls, [prim], expected)


@check("abstract-batching", family="batching", kinds={"primitive"})
def abstract_batching_check(ctx: Context) -> Iterator[Finding]:
    if not isinstance(ctx.cache.batching_evidence, Evidence):
        ctx.cache.batching_evidence = abstract_evidence(ctx)
    ev: Evidence = ctx.cache.batching_evidence
    yield from rule_returns_check.run(ctx)  # malformed returns and rules that raise: their normal JXB codes
    spied = {id(c.variant) for c in ev.calls if c.error is not None or c.problems}
    failed = [o for o in ev.outcomes if o.error is not None and id(o.variant) not in spied]
    if failed:  # vmap failed outside the rule's own return (JAX's checks of what the rule handed back)
        first = failed[0]
        assert first.error is not None
        yield rules.VMAP_CALL_FAILED.finding(
            evidence=f"jax.eval_shape(jax.vmap({ctx.subject.name}, in_axes={first.variant.in_axes_text})) raised "
            f"{first_line(first.error)} ({len(failed)} of {len(ev.outcomes)} in_axes variants fail).",
            fix=f"Make {ctx.subject.name}'s batching rule return outputs JAX accepts for these in_axes.",
            location=rule_location(_compat.batching_rule(ctx.subject.obj), ctx.subject.location))


# ---------------------------------------------------------------------------------------------------------------
# Differentiation: tangent and cotangent avals, traced
# ---------------------------------------------------------------------------------------------------------------


def _differentiable(ctx: Context) -> list[int]:
    return [i for i, s in enumerate(ctx.specs) if s.is_inexact and i not in ctx.subject.unperturbed]


def _closed(ctx: Context, wrt: list[int]) -> Callable[..., Any]:
    """The subject as a function of the differentiable arguments; the others stay abstract inputs too."""
    fn = subject_fn(ctx.subject)

    def of(diff: tuple, rest: tuple) -> Any:
        args: list[Any] = [None] * len(ctx.specs)
        it_d, it_r = iter(diff), iter(rest)
        for i in range(len(ctx.specs)):
            args[i] = next(it_d) if i in wrt else next(it_r)
        return fn(*args)

    return of


def _aval_list(tree: Any) -> list[tuple[tuple[int, ...], np.dtype]]:
    return [(tuple(x.shape), np.dtype(x.dtype)) for x in jax.tree_util.tree_leaves(tree)]


def _rule_of(ctx: Context, role: str) -> Any:
    subject = ctx.subject
    if subject.kind == "primitive":
        return _compat.jvp_rule(subject.obj) if role == "jvp" else _compat.transpose_rule(subject.obj)
    if subject.kind == "custom_vjp":
        _, fwd, bwd, _, _ = _compat.custom_vjp_parts(subject.obj)
        return fwd if role == "jvp" else bwd
    if subject.kind == "custom_jvp":
        return _compat.custom_jvp_parts(subject.obj)[1]
    return None


def _raised(exc: BaseException, *fns: Any) -> Any:
    """JXG025 where one of the rules `fns` refused with a `raise` of its own ("does not support automatic
    differentiation": reverse mode runs the JVP rule first), as the concrete checks grade it; else JXG017."""
    refuses = any(fn is not None and raises_on_purpose(exc, fn) for fn in fns)
    return rules.DERIVATIVE_RULE_REFUSES if refuses else rules.DERIVATIVE_RULE_RAISED


def _shapes_of(ctx: Context, positions: list[int]) -> tuple:
    return tuple(jax.ShapeDtypeStruct(ctx.specs[i].shape, ctx.specs[i].dtype) for i in positions)


@check("abstract-jvp", family="grad", kinds={"primitive", "custom_jvp", "custom_vjp"})
def abstract_jvp_check(ctx: Context) -> Iterator[Finding]:
    subject = ctx.subject
    if subject.kind == "primitive" and _compat.jvp_rule(subject.obj) is None:
        raise SkipCheck(f"{subject.obj.name} has no JVP rule")
    if subject.kind == "custom_vjp":
        raise SkipCheck("a custom_vjp's forward mode is not its own rule")
    wrt = _differentiable(ctx)
    if not wrt:
        raise SkipCheck("no floating-point argument to differentiate")
    rest = [i for i in range(len(ctx.specs)) if i not in wrt]
    of = _closed(ctx, wrt)
    primals, others = _shapes_of(ctx, wrt), _shapes_of(ctx, rest)
    tangents = tuple(jax.ShapeDtypeStruct(s.shape, _compat.tangent_dtype(s.dtype)) for s in primals)
    rule = _rule_of(ctx, "jvp")
    ran = call_user(jax.eval_shape, lambda p, t, r: jax.jvp(lambda *d: of(d, r), p, t), primals, tangents, others)
    if ran.error is not None:
        location = user_frame_location(ran.error, rule) or rule_location(rule, subject.location)
        if removed_api(ran.error):  # a JAX name this release no longer has: the API, not the rule's logic
            yield removed_api_finding(ran.error, f"{subject.name}'s JVP rule (traced by jax.eval_shape)", location)
            return
        yield _raised(ran.error, rule).finding(
            evidence=f"jax.eval_shape(jax.jvp({subject.name}, ...)) for {_inputs(ctx)} raised "
            f"{first_line(ran.error)}.",
            fix=f"Make {subject.name}'s JVP rule accept these shapes and return (primal_out, tangent_out).",
            location=location)
        return
    primal_out, tangent_out = ran.value
    want = [(s, np.dtype(_compat.tangent_dtype(d))) for s, d in _aval_list(primal_out)]
    got = _aval_list(tangent_out)
    # an integer output's tangent may keep its own integer dtype (`tangent_dtype_accepted`, as the concrete check)
    if len(got) != len(want) or not all(g[0] == w[0] and tangent_dtype_accepted(g[1], w[1])
                                        for g, w in zip(got, want)):
        yield rules.JVP_OUTPUT_STRUCTURE.finding(
            evidence=f"traced with {_inputs(ctx)}, {subject.name}'s JVP gives tangents {_avals(got)} for primal "
            f"outputs {_avals(_aval_list(primal_out))} (expected {_avals(want)}).",
            fix="Return one tangent per primal output, each with the primal's shape and tangent dtype.",
            location=rule_location(rule, subject.location))


@check("abstract-vjp", family="grad", kinds={"primitive", "custom_jvp", "custom_vjp"})
def abstract_vjp_check(ctx: Context) -> Iterator[Finding]:
    subject = ctx.subject
    if subject.kind == "primitive" and _compat.jvp_rule(subject.obj) is None:
        raise SkipCheck(f"{subject.obj.name} has no JVP rule, so no reverse mode")
    wrt = _differentiable(ctx)
    if not wrt:
        raise SkipCheck("no floating-point argument to differentiate")
    rest = [i for i in range(len(ctx.specs)) if i not in wrt]
    of = _closed(ctx, wrt)
    primals, others = _shapes_of(ctx, wrt), _shapes_of(ctx, rest)
    out = call_user(jax.eval_shape, lambda p, r: of(p, r), primals, others)
    if out.error is not None:
        raise SkipCheck(f"{subject.name} cannot be traced: {first_line(out.error)}")
    cotangents = jax.tree_util.tree_map(
        lambda a: jax.ShapeDtypeStruct(a.shape, _compat.tangent_dtype(a.dtype)), out.value)

    def pullback(p: tuple, r: tuple, ct: Any) -> Any:
        return jax.vjp(lambda *d: of(d, r), *p)[1](ct)

    rule = _rule_of(ctx, "transpose")
    ran = call_user(jax.eval_shape, pullback, primals, others, cotangents)
    structure = (rules.VJP_BWD_STRUCTURE if subject.kind == "custom_vjp" else rules.TRANSPOSE_OUTPUT_STRUCTURE)
    what = "bwd" if subject.kind == "custom_vjp" else "transpose rule"
    if ran.error is not None:
        text = first_line(ran.error)
        if subject.kind == "primitive" and "Transpose rule" in str(ran.error) and "not implemented" in str(ran.error):
            raise SkipCheck(f"reverse mode of {subject.name} needs a transpose rule it lacks: {text}")
        location = user_frame_location(ran.error, rule) or rule_location(rule, subject.location)
        if removed_api(ran.error):
            yield removed_api_finding(ran.error, f"{subject.name}'s {what} (traced by jax.eval_shape)", location)
            return
        shape_error = subject.kind == "custom_vjp" and "bwd" in str(ran.error)
        finding_rule = structure if shape_error else _raised(ran.error, rule, _rule_of(ctx, "jvp"))
        yield finding_rule.finding(
            evidence=f"jax.eval_shape of jax.vjp({subject.name}, ...) for {_inputs(ctx)} raised {text}.",
            fix=f"Make {subject.name}'s {what} return one cotangent per differentiable argument, shaped like it.",
            location=location)
        return
    want = [(tuple(s.shape), np.dtype(_compat.tangent_dtype(s.dtype))) for s in primals]
    got = _aval_list(ran.value)
    if got != want:
        yield structure.finding(
            evidence=f"traced with {_inputs(ctx)}, the {what} of {subject.name} gives cotangents {_avals(got)} for "
            f"arguments {_avals(want)}.",
            fix=f"Return from the {what} one cotangent per differentiable argument, each shaped like it.",
            location=rule_location(rule, subject.location))


def _avals(avals: list[tuple[tuple[int, ...], Any]]) -> str:
    return "(" + ", ".join(aval_text(s, d) for s, d in avals) + ")"


def _inputs(ctx: Context) -> str:
    text = ", ".join(str(s) for s in ctx.specs) or "no inputs"
    if ctx.subject.params:
        text += " with " + ", ".join(f"{k}={v!r}" for k, v in sorted(ctx.subject.params.items()))
    return text


# The abstract eval check of the registration family needs no value except in its comparison with the impl,
# which it skips when the example raised; it runs as is.
CHECKS: list[Check] = [abstract_eval_check, abstract_batching_check, abstract_jvp_check, abstract_vjp_check]
