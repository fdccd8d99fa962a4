"""Check: vmap against the per-example loop. Mismatching variants, outputs left unbatched although they vary,
vmap failures outside the user's rules, and the fixes for each.
"""

from __future__ import annotations

import re

from collections.abc import Iterator
from typing import Any

import numpy as np

from ... import _compat
from ..._core import _locate
from ..._loading import _numerics
from ... import _rules as rules
from ..._core._report import Finding
from .._base import Context, SkipCheck, check
from .._shared import first_line, prim_var, registration_location, rule_location, user_frame_location
from ._evidence import EVIDENCE_READS, Evidence, Outcome, _run, evidence
from ._rule_returns import (
    _display, _dropped_axis_hint, _other_variants, _owner, _raised_finding, _return_location, _structure_finding,
    suggested_dims,
)
from ..._harness.source import return_nodes
from ._aggregate import batch_aggregate, unbatched_outputs
from ._source import corrected_return
from ._true_axis import WRONG_VALUES, measured_dims, rule_constructs
from ._spy import RuleCall, Spy

# ---------------------------------------------------------------------------------------------------------------
# Check: vmap against the per-example loop
# ---------------------------------------------------------------------------------------------------------------


@check("batching-vs-loop", family="batching", kinds={"primitive", "function"}, reads=EVIDENCE_READS)
def vs_loop_check(ctx: Context) -> Iterator[Finding]:
    if ctx.subject.kind == "function":
        _skip_foreign(ctx)
    ev = evidence(ctx)
    for note in ev.notes:
        yield rules.CHECK_SKIPPED.finding(check=ctx.check_name, reason=note + ".", location=ctx.subject.location)
    varies = list(_unbatched_but_varies(ctx, ev))
    yield from (finding for finding, _ in varies)
    explained = {key for _, keys in varies for key in keys}
    if ctx.subject.kind == "function":
        yield from _function_outcomes(ctx, ev, explained)
        return
    yield from _mismatch_findings(ctx, ev, explained)
    yield from _raised_outside_rules(ctx, ev, [o for o in ev.outcomes if o.error is not None])


def _skip_foreign(ctx: Context) -> None:
    jaxpr = ctx.cache.jaxpr
    foreign = [e.primitive.name for e in _compat.iter_eqns(jaxpr) if _compat.is_foreign_call(e)] if jaxpr else []
    custom = [c for c, *_ in ctx.cache.custom_calls if _compat.is_custom_vmap(c)]
    if foreign or custom:
        what = ", ".join(sorted(set(foreign))) if foreign else "custom_vmap"
        raise SkipCheck(f"the function calls {what}: its batching is checked by the ffi/custom_vmap checks "
                        f"({rules.FFI_VMAP_METHOD_MISSING.code[:5]}x/{rules.VMAP_RESULT_MISMATCH.code[:3]})")


def _unbatched_but_varies(ctx: Context, ev: Evidence) -> Iterator[tuple[Finding, set[tuple]]]:
    """JXB010: an output the rule reports unbatched (None) that differs across examples."""
    if ctx.subject.kind != "primitive":
        return
    prim, name = ctx.subject.obj, _display(ctx, ctx.subject.obj)
    flagged = {k: varying for k, calls in unbatched_outputs(ev.calls).items()
               if (varying := [c for c in calls
                               if ev.reference.constant(c.variant.pattern, k, c.variant.size) is False])}
    rule_fn = _compat.batching_rule(prim)
    for k, calls in flagged.items():
        call = calls[0]
        per = ev.reference.outputs(call.variant.pattern, call.variant.size)
        assert not isinstance(per, BaseException)
        b = next(b for b in range(1, len(per)) if not np.array_equal(per[b][k], per[0][k]))
        diff = _numerics.compare(per[b][k], per[0][k]).describe()
        line = _returning_line_of(ev, call)
        message = (f"{_owner(ctx, prim)}'s batching rule reports output {k} unbatched (dim None) for "
                   f"{call.variant.describe(name)} ({call.describe()}), but one example's output {k} differs from "
                   f"another's (example {b} vs example 0: {diff}). vmap broadcasts the single value it got to all "
                   f"{call.variant.size} examples, so all but one are wrong.{_other_variants(calls, call, name)}")
        suggestion = suggested_dims(ev, prim).get(k)
        fixed = corrected_return(rule_fn, line, {k: suggestion}, bool(prim.multiple_results)) if (
            suggestion and suggestion != "None" and rule_fn is not None) else None
        reduces = "reduction" in rule_constructs(rule_fn) if rule_fn is not None else False
        fix = (f"Return `{fixed}`: output {k} carries the batch at that axis." if fixed else
               f"Compute output {k} per example (keep the batch axis"
               + (", e.g. reduce over the non-batch axes only" if reduces else "")
               + f") and return the axis where the batch is.{_dropped_axis_hint(rule_fn) if reduces else ''}")
        keys = {("output", k)}
        aggregate = batch_aggregate(calls, k, ev)
        if aggregate is not None:
            yield _aggregate_finding(ctx, call, k, aggregate, per, fix, rule_fn, line), keys
            continue
        yield rules.UNBATCHED_OUTPUT_VARIES.finding(
            evidence=message,
            fix=fix,
            location=_return_location(rule_fn, line, rules.UNBATCHED_OUTPUT_VARIES,
                                                         ctx.subject.location)), keys


def _aggregate_finding(ctx: Context, call: RuleCall, k: int, aggregate: str, per: list, fix: str, rule_fn: Any,
                       line: int | None) -> Finding:
    """JXB024: output k's one value is `aggregate` of the batch; both readings and how to state the intended one."""
    name = _display(ctx, call.prim)
    values = np.stack([np.asarray(p[k]) for p in per])
    whole = aggregate == "the whole batch"
    what = ("the per-example outputs stacked (the batch kept as an ordinary axis)" if whole
            else f"the {aggregate} over the batch of the per-example outputs")
    mistake = "returns None where the batch dim is" if whole else "reduces over the batch axis"
    spread = ("values that differ by example" if values.dtype.kind == "b"
              else f"values from {float(np.min(values)):.4g} to {float(np.max(values)):.4g}")
    message = (f"{_owner(ctx, call.prim)}'s batching rule reports output {k} unbatched (dim None) for "
               f"{call.variant.describe(name)} ({call.describe()}), and the one value it returns is {what}, where "
               f"applying {name} to each of the {call.variant.size} examples gives {spread}. vmap gives every "
               f"example that same batch-wide value. Either the output is batch-wide by design (an \"unvmap\": a "
               f"batch statistic, a flag shared by the batch), or the rule {mistake} by mistake and vmap of "
               f"{name} is silently not per-example.")
    code = rules.UNBATCHED_OUTPUT_IS_BATCH_AGGREGATE.code
    return rules.UNBATCHED_OUTPUT_IS_BATCH_AGGREGATE.finding(
        evidence=message,
        fix=f"If the batch-wide value is intended, add `# jaxdiag: intended[{code}]` to this return line or the rule's "
            f"`def` line (it silences this finding only). Otherwise: {fix}",
        location=_return_location(rule_fn, line, rules.UNBATCHED_OUTPUT_IS_BATCH_AGGREGATE, ctx.subject.location))


def _returning_line_of(ev: Evidence, call: RuleCall) -> int | None:
    rule_fn = _compat.batching_rule(call.prim)
    returns = return_nodes(rule_fn) if rule_fn is not None and _locate.is_user_code(rule_fn) else []
    return returns[0][0] if len(returns) == 1 else call.return_line


def _mismatch_findings(ctx: Context, ev: Evidence, explained: set[tuple]) -> Iterator[Finding]:
    """JXB005: one finding per subject, for the first variant that differs, listing the others."""
    failing = [o for o in ev.outcomes if o.count_mismatch
               or (o.mismatched and not all(("output", k) in explained for k in o.mismatched))]
    if not failing:
        return
    name = _subject_display(ctx)
    first = failing[0]
    if not first.count_mismatch and not ev.reference.repeats(first.variant):
        raise SkipCheck(f"{name} returns other values when called again on the same examples (outputs that are not "
                        "a function of its inputs: a kernel leaving part of its output unwritten, state kept between "
                        "calls): no vmap can be compared with a per-example loop, so its batching was not judged",
                        note=True, location=ctx.subject.location)
    message = f"{_mismatch_text(first, name)}{_others(failing, first, name, ev)}"
    location = (rule_location(_compat.batching_rule(ctx.subject.obj), ctx.subject.location)
                if ctx.subject.kind == "primitive" else ctx.subject.location)
    generic = _compat.generic_batcher_name(ctx.subject.obj) if ctx.subject.kind == "primitive" else None
    location = (registration_location(ctx.subject, generic) if generic else None) or location
    yield rules.BATCH_RESULT_MISMATCH.finding(
        evidence=message,
        fix=_mismatch_fix(ctx, ev, failing),
        location=location)


def _subject_display(ctx: Context) -> str:
    return _display(ctx, ctx.subject.obj) if ctx.subject.kind == "primitive" else ctx.subject.name


def _mismatch_text(outcome: Outcome, name: str) -> str:
    where = outcome.variant.describe(name)
    if outcome.count_mismatch:
        got, want = outcome.count_mismatch
        return f"{where} returns {got} output(s), applying {name} to each example returns {want}."
    k = outcome.mismatched[0]
    comparison = outcome.comparisons[k]
    shapes = ", ".join(str(s) for s in outcome.input_shapes)
    return (f"{where} (inputs of shape {shapes}) differs from applying {name} to each of the "
            f"{outcome.variant.size * (outcome.variant.inner or 1)} examples and stacking, for output {k}: "
            f"{comparison.describe()}.")


def _others(failing: list[Outcome], first: Outcome, name: str, ev: Evidence) -> str:
    rest = [o.variant.describe(name) for o in failing[1:]]
    passing = [o.variant.describe(name) for o in ev.outcomes if o.ok]
    text = ""
    if rest:
        text += f" Also differs for {'; '.join(rest[:3])}{f' and {len(rest) - 3} more' if len(rest) > 3 else ''}."
    if passing:
        text += f" Agrees for {'; '.join(passing[:2])}{f' and {len(passing) - 2} more' if len(passing) > 2 else ''}."
    return text


def _mismatch_fix(ctx: Context, ev: Evidence, failing: list[Outcome]) -> str:
    generic = _compat.generic_batcher_name(ctx.subject.obj) if ctx.subject.kind == "primitive" else None
    if generic:
        return _generic_batcher_fix(ctx, generic)
    modes = {o.variant.mode for o in failing}
    bad_axes = [o.variant for o in failing if o.variant.single_level and o.variant.mode != "jit(vmap)"]
    good = [o.variant for o in ev.outcomes if o.ok]
    small = [s for s in ctx.specs if s.dtype in (np.int8, np.uint8)]
    if small and good and all(o.variant.size > max(v.size for v in good) >= 1 for o in failing):
        dtype = "int8" if any(s.dtype == np.int8 for s in small) else "uint8"
        return (f"The rule is right for small batches and wrong for a batch of {failing[0].variant.size}, beyond "
                f"the range of its {dtype} inputs: it computes batch indices or sizes in the input's dtype (e.g. "
                f"`jnp.arange(size, dtype=idx.dtype)`), which wraps around. Build them in int32 "
                "(`jnp.arange(size)`) and cast the user's indices up, not the batch index down.")
    # "right at 0": a real batch (size > 1) with the batch in front passed, and no such layout failed
    failed_layouts = {(o.variant.axes, o.variant.mode) for o in failing}
    front_ok = any(v.axes and all(a in (0, None) for a in v.axes) and v.mode == "eager" and v.size > 1
                   and (v.axes, v.mode) not in failed_layouts for v in good)
    measured = _measured_fix(ctx, ev)
    if measured and not measured.startswith("No axis"):
        return measured
    if bad_axes and any(None in v.axes for v in bad_axes) and all(None in v.axes for v in bad_axes):
        return ("The rule is wrong when some arguments are unbatched (dim None), typically because it relies on "
                "broadcasting against a batch axis that is not where it assumes: bring every argument to the same "
                "layout first with `batching.bdim_at_front(x, bx, size)` (it broadcasts unbatched ones).")
    if front_ok and bad_axes:
        return ("The rule is right when the batch axis is at 0 and wrong elsewhere: it assumes the batch dim is 0. "
                f"{_move_first(ctx)}, or shift every axis it uses by the batch dim.")
    if modes <= {"jit(vmap)", "vmap(jit)"}:
        return "The rule is right eagerly but not under jit: it must not depend on concrete values."
    if modes == {"nested"}:
        return ("The rule is wrong when its inputs carry two batch axes (nested vmap): it must not assume the "
                "number of leading axes; compute axes from the ranks and dims it receives.")
    axis_params = [k for k in ctx.subject.params if "axis" in k or "axes" in k or "dim" in k]
    if axis_params and ctx.subject.kind == "primitive":
        names = ", ".join(f"`{k}={ctx.subject.params[k]!r}`" for k in axis_params)
        return (f"The rule does not compute what the primitive computes on each example: {names} counts one "
                "example's axes, so once the rule has moved the batch axis to the front it must bind with that "
                "axis shifted by one (e.g. `axis=axis + 1`) and return 0.")
    if measured:
        return measured
    return ("The rule does not compute what the primitive computes on each example: once the batch axis is in "
            "front, every axis the computation uses (an `axis` parameter, a reduction, a transpose) moves by one; "
            "compare the rule's body with the impl applied per example.")


def _move_first(ctx: Context) -> str:
    """Move each batched operand's axis to the front, written with the rule's own names where its source unpacks
    `batched_args` and `batch_dims` (`(values,), (bv,) = batched_args, batch_dims`)."""
    generic = "Move it first (`x = jnp.moveaxis(x, bx, 0)` or `batching.bdim_at_front(x, bx, size)`) and return 0"
    rule_fn = _compat.batching_rule(ctx.subject.obj) if ctx.subject.kind == "primitive" else None
    pairs = _unpacked_operands(rule_fn) if rule_fn is not None else []
    if not pairs:
        return generic
    block = "\n".join(f"    {x} = jnp.moveaxis({x}, {d}, 0) if {d} is not None else {x}" for x, d in pairs)
    dims = " or ".join(f"`{d}`" for _, d in pairs)
    return (f"Move each operand's batch axis to the front right after unpacking them, e.g.\n{block}\nthen compute "
            f"with the batch axis at 0 and return 0 as the output's dim (not {dims})")


def _unpacked_operands(rule_fn: Any) -> list[tuple[str, str]]:
    """[(operand name, its batch dim's name)] from the rule's unpacking of its two parameters, in order."""
    import ast

    from ..._harness.source import function_source

    found = function_source(rule_fn)
    if found is None or len(found.node.args.args) < 2:
        return []
    args_name, dims_name = (a.arg for a in found.node.args.args[:2])
    values: list[str] = []
    dims: list[str] = []

    def names(node: ast.AST) -> list[str] | None:
        elts = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
        out = [e.id for e in elts if isinstance(e, ast.Name)]
        return out if len(out) == len(elts) else None

    for stmt in found.node.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            continue
        target, value = stmt.targets[0], stmt.value
        sources = names(value) if isinstance(value, (ast.Tuple, ast.Name)) else None
        if sources == [args_name, dims_name] and isinstance(target, ast.Tuple) and len(target.elts) == 2:
            values, dims = names(target.elts[0]) or [], names(target.elts[1]) or []
        elif sources == [args_name]:
            values = names(target) or []
        elif sources == [dims_name]:
            dims = names(target) or []
    return list(zip(values, dims)) if values and len(values) == len(dims) else []


def _measured_fix(ctx: Context, ev: Evidence) -> str | None:
    """From the measured batch axes of the subject's own rule calls: the dim to return when an axis other than the
    returned one reproduces the loop (sizes coincided, so the shape checks could not tell), or "wrong values" when
    none does."""
    if ctx.subject.kind != "primitive":
        return None
    prim = ctx.subject.obj
    rule_fn = _compat.batching_rule(prim)
    if rule_fn is None or not _locate.is_user_code(rule_fn):
        return None
    moved: dict[int, Any] = {}
    wrong: set[int] = set()
    lines = set()
    for call in ev.calls:
        if call.prim is not prim or call.out_dims is None:
            continue
        measured = measured_dims(call, ev.reference)
        if measured is None:
            continue
        for k, (got, returned) in enumerate(zip(measured, call.out_dims)):
            if got is WRONG_VALUES:
                wrong.add(k)
            elif got != returned:
                moved.setdefault(k, got)
                lines.add(call.return_line or _returning_line_of(ev, call))
    multiple = bool(prim.multiple_results)
    label = (lambda k: f"output {k}") if multiple else (lambda k: "the output")
    if moved and not wrong:
        suggestions = suggested_dims(ev, prim)
        line = next(iter(lines)) if len(lines) == 1 else None
        fixed = corrected_return(rule_fn, line, {k: suggestions[k] for k in moved if k in suggestions}, multiple) \
            if line else None
        parts = [f"{label(k)[:1].upper() + label(k)[1:]}'s batch axis is at dim {d}, not where the rule says"
                 for k, d in moved.items()]
        text = ("; ".join(parts) + ": jaxdiag moved each axis of the rule's output to the front and compared with "
                "the per-example results, and only that one matches.")
        return text + (f" Return (line {line}): `{fixed}`" if fixed else "")
    if wrong:
        outs = ", ".join(label(k) for k in sorted(wrong))
        return (f"No axis of {outs} (and not None) reproduces the per-example results: the rule computes the wrong "
                f"values, not just the wrong dim (it mixes examples or computes something else than the impl)."
                f"{_dropped_axis_hint(rule_fn)}")
    return None


def _generic_batcher_fix(ctx: Context, helper: str) -> str:
    """`defvectorized` binds the primitive on the batched operands where vmap left the batch axis: right only for
    elementwise primitives."""
    var, name = prim_var(ctx.subject), ctx.subject.obj.name
    n = len(ctx.specs)
    xs = ", ".join(f"x{i}" for i in range(n)) if n > 1 else "x"
    bs = ", ".join(f"b{i}" for i in range(n)) if n > 1 else "bx"
    moved = ", ".join(f"batching.bdim_at_front(x{i}, b{i}, size)" for i in range(n)) if n > 1 else \
        "jnp.moveaxis(x, bx, 0)"
    size = "    size = next(a.shape[d] for a, d in zip(batched_args, batch_dims) if d is not None)\n" if n > 1 else ""
    return (f"`batching.{helper}({var})` binds the primitive on the batched input with the batch axis wherever "
            "vmap put it, which is only right for elementwise primitives; this one works along specific axes. "
            "Move the batch axis to the front and bind there (the impl must accept a leading batch axis):\n"
            f"def _{name}_batching(batched_args, batch_dims, **params):\n"
            f"    ({xs}{',' if n == 1 else ''}), ({bs}{',' if n == 1 else ''}) = batched_args, batch_dims\n{size}"
            f"    return {var}.bind({moved}, **params), 0\n"
            f"batching.primitive_batchers[{var}] = _{name}_batching")


def _raised_outside_rules(ctx: Context, ev: Evidence, failed: list[Outcome]) -> Iterator[Finding]:
    """JXB013: vmap itself raised, outside every spied rule."""
    if not failed:
        return
    name = _subject_display(ctx)
    first = failed[0]
    exc = first.error
    assert exc is not None
    missing = _jax_primitive_without_batching(ctx, exc)
    if missing is not None:  # JAX's own limitation (e.g. custom_partitioning): nothing in the user's code to fix
        yield rules.CHECK_SKIPPED.finding(
            reason=f"vmap of {name} could not be checked: JAX itself has no batching rule for its own primitive "
                   f"{missing!r}, which {name} uses",
            check="batching-vs-loop", location=ctx.subject.location)
        return
    rest = [o.variant.describe(name) for o in failed[1:]]
    also = f" Also for {'; '.join(rest[:3])}." if rest else ""
    passing = [o.variant.describe(name) for o in ev.outcomes if o.ok]
    works = f" It works for {passing[0]}." if passing else ""
    fn = ctx.subject.obj if ctx.subject.kind == "function" else None
    location = (user_frame_location(exc, fn) if fn is not None else None) or ctx.subject.location
    yield rules.VMAP_RAISED.finding(
        variant_describe=first.variant.describe(name),
        exc_error=first_line(exc),
        name=name,
        also=also,
        works=works,
        vmap_raised_fix=_vmap_raised_fix(exc),
        location=location)


def _vmap_raised_fix(exc: BaseException) -> str:
    kind = type(exc).__name__
    if "Tracer" in kind or "Concretization" in kind:
        return ("Do not branch in Python on array values or convert them to NumPy/Python scalars: use "
                "`jnp.where`, `jax.lax.cond`/`select`, and jax.numpy throughout.")
    return "Make the function traceable with batched inputs (use jax.numpy on the traced values)."


def _function_outcomes(ctx: Context, ev: Evidence, explained: set[tuple]) -> Iterator[Finding]:
    """A function's failures, attributed: to a nested primitive's rule (reported in that primitive's own report),
    to a missing rule, or to the function itself."""
    nested = {s.obj for s in ctx.cache.nested_subjects if s.kind == "primitive"}
    blamed: list[str] = []
    own_mismatch: list[Outcome] = []
    own_error: list[Outcome] = []
    for outcome in ev.outcomes:
        if outcome.ok or outcome.reference_error is not None:
            continue
        culprit = _culprit(outcome, nested)
        if culprit is None and ev.spied and _loop_rules_fix(ctx, ev, outcome):
            culprit = "the batching rules of " + ", ".join(p.name for p in ev.spied)
        if culprit is not None:
            blamed.append(f"{outcome.variant.describe(ctx.subject.name)}: {culprit}")
        elif outcome.abort is not None:
            yield from _unattributed_abort(ctx, outcome.abort)
        elif outcome.error is not None:
            own_error.append(outcome)
        else:
            own_mismatch.append(outcome)
    if own_mismatch:
        yield from _mismatch_findings(ctx, Evidence(ev.subject, ev.fn, ev.reference, own_mismatch + [
            o for o in ev.outcomes if o.ok], ev.calls, ev.spied, None), explained)
    yield from _raised_outside_rules(ctx, ev, own_error)
    if blamed and not own_mismatch and not own_error:
        raise SkipCheck("vmap of the function fails or differs because of nested primitives, reported in their "
                        "own reports: " + "; ".join(dict.fromkeys(blamed)))


def _culprit(outcome: Outcome, nested: set[Any]) -> str | None:
    if outcome.abort is not None and outcome.abort.prim in nested:
        return f"{outcome.abort.prim.name}'s batching rule"
    if outcome.error is not None:
        text = str(outcome.error)
        for prim in nested:
            for marker in (f"Batching rule for '{prim.name}'", f"Abstract evaluation for '{prim.name}'",
                           f"primitive '{prim.name}' not found"):
                if marker in text:
                    return f"{prim.name} (missing rule)"
    return None


def _loop_rules_fix(ctx: Context, ev: Evidence, outcome: Outcome) -> bool:
    """Re-run the variant with every user primitive batched by a per-example loop: if that agrees with the
    reference, the user's batching rules are what differs."""
    spy = Spy(ctx.subject, None, oracle=True)
    fresh = lambda *args: ev.fn(*args)  # noqa: E731 - a new function object, so no jit cache holds the user's rules
    redo = _run(fresh, ev.reference, spy, ev.spied, outcome.variant)
    return redo.ok


def _unattributed_abort(ctx: Context, call: RuleCall) -> Iterator[Finding]:
    """A primitive that is not a subject of its own (bound only inside another rule): report it here."""
    if call.error is not None:
        yield _raised_finding(ctx, [call])
        return
    for problem in call.problems[:1]:
        yield _structure_finding(ctx, evidence(ctx), [(call, problem)], {})


_NO_BATCHING_RULE = re.compile(r"Batching rule for '([^']+)' not implemented")


def _jax_primitive_without_batching(ctx: Context, exc: BaseException) -> str | None:
    """The name of a JAX-owned primitive in the traced function whose missing batching rule made vmap raise."""
    found = _NO_BATCHING_RULE.search(str(exc)) if isinstance(exc, NotImplementedError) else None
    jaxpr = ctx.cache.jaxpr
    if found is None or jaxpr is None:
        return None
    owned = {e.primitive.name for e in _compat.iter_eqns(jaxpr) if _compat.is_builtin_primitive(e.primitive)}
    return found.group(1) if found.group(1) in owned else None
