"""Check: the batching rule's returns (primitives). What the dims should have been (`suggested_dims`), and the
findings and fixes for malformed returns and rules that raise; the other batching checks reuse the builders.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from ... import _compat
from ..._core import _locate
from ... import _rules as rules
from ..._core._report import Finding, Location
from .._base import Context, check
from .._shared import (
    raises_on_purpose, first_line, prim_var, registration_location, removed_api, removed_api_finding, rule_location,
    user_frame_location,
)
from ._evidence import EVIDENCE_READS, Evidence, evidence
from .._vmap_harness import axes_repr as _axes_repr
from ..._harness.source import own_nodes, return_nodes
from ._aggregate import batch_aggregate, unbatched_outputs
from ._source import _dim_names, _function_node, _rule_names, corrected_return
from ._spy import Problem, RuleCall
from ._true_axis import WRONG_VALUES, measured_dims, rule_constructs

# ---------------------------------------------------------------------------------------------------------------
# What the dims should have been
# ---------------------------------------------------------------------------------------------------------------

_UNKNOWN = object()


def _correct_dim(shape: tuple[int, ...], expected: tuple[int, ...], size: int | None) -> Any:
    """Where the batch axis really is in an output of `shape` whose one-example shape is `expected`: an int,
    None when the output has no batch axis, or _UNKNOWN."""
    if size is None:
        return _UNKNOWN
    found = [d for d in range(len(shape)) if shape[d] == size and shape[:d] + shape[d + 1:] == tuple(expected)]
    if len(found) == 1:
        return found[0]
    if tuple(shape) == tuple(expected):
        return None
    return _UNKNOWN


def suggested_dims(ev: Evidence, prim: Any) -> dict[int, str]:
    """For each output, the dim expression the rule should return, when every observed call agrees on one: a
    constant, None, or the dim variable of an input whose dim it always equals."""
    calls = [c for c in ev.calls if c.prim is prim and c.out_shapes is not None and c.expected is not None
             and len(c.out_shapes) == len(c.expected)]
    if not calls:
        return {}
    n_out = len(calls[0].out_shapes or [])
    rule = _compat.batching_rule(prim)
    names = _dim_names(rule, _compat.batching_rule_leading_args(prim), len(calls[0].in_dims)) if rule else []
    out: dict[int, str] = {}
    for k in range(n_out):
        observed = []
        for c in calls:
            if c.out_shapes is None or k >= len(c.out_shapes) or c.expected is None:
                continue
            dim = _correct_dim(c.out_shapes[k], c.expected[k][0], c.size)
            if dim is None and c.top and ev.reference.constant(c.variant.pattern, k, c.variant.size) is False:
                dim = _UNKNOWN  # no batch axis although the output varies: the rule drops or reduces it
            measured = measured_dims(c, ev.reference)  # by values: beats shapes when sizes coincide
            if measured is not None and k < len(measured):
                dim = _UNKNOWN if measured[k] is WRONG_VALUES else measured[k]
            observed.append((dim, c.in_dims))
        if not observed or any(d is _UNKNOWN for d, _ in observed):
            continue
        values = {d for d, _ in observed}
        if len(values) == 1:
            out[k] = repr(next(iter(values)))
            continue
        for i, name in enumerate(names):
            if all(d == dims[i] for d, dims in observed):
                out[k] = name
                break
    return out


# ---------------------------------------------------------------------------------------------------------------
# Check: the rule's returns (primitives)
# ---------------------------------------------------------------------------------------------------------------

_CONSEQUENCE = {  # what happens after the rule returns, when JAX's own message will not say it
    rules.BATCH_AXIS_SIZE_MISMATCH.code: " JAX never checks this (not even under jax.enable_checks): the wrong "
                                         "shape surfaces later, in unrelated code.",
}


@check("batching-rule", family="batching", kinds={"primitive"}, reads=EVIDENCE_READS)
def rule_returns_check(ctx: Context) -> Iterator[Finding]:
    ev = evidence(ctx)
    prim = ctx.subject.obj
    calls = [c for c in ev.calls if c.prim is prim]
    groups: dict[str, list[tuple[RuleCall, Problem]]] = {}
    whole = _whole_batch_outputs(ev, calls)
    for call in calls:
        for problem in call.problems:
            if problem.rule is rules.BATCHED_SHAPE_MISMATCH and problem.output in whole:
                continue  # the batch kept as an axis on purpose or not: JXB024 reports that output, both readings
            groups.setdefault(problem.rule.code, []).append((call, problem))
    suggestions = suggested_dims(ev, prim)
    for items in groups.values():
        yield _structure_finding(ctx, ev, items, suggestions)
    raised = [c for c in calls if c.error is not None]
    if raised:
        yield _raised_finding(ctx, raised)


def _whole_batch_outputs(ev: Evidence, calls: list[RuleCall]) -> set[int]:
    """The outputs returned unbatched (dim None) as the whole batch itself: their shape is one example's with the
    batch axis in front, which is what an output left batch-wide means, not a second defect."""
    return {k for k, group in unbatched_outputs(calls).items() if batch_aggregate(group, k, ev) == "the whole batch"}


def _structure_finding(ctx: Context, ev: Evidence, items: list[tuple[RuleCall, Problem]],
                       suggestions: dict[int, str]) -> Finding:
    call, problem = items[0]
    prim, name = call.prim, _display(ctx, call.prim)
    rule_fn = _compat.batching_rule(prim)
    others = _other_variants([c for c, _ in items], call, name)
    # Lead with the defect (docs/jax-vs-jaxdiag.md and one-line renderers show the first sentence), then the call.
    texts = list(dict.fromkeys(p.text for c, p in items if c is call))
    first, rest = texts[0], [t[:1].upper() + t[1:] for t in texts[1:]]
    joint = (" " if first.startswith(("returned", "an output")) else
             " rejects the arguments JAX passes: "
             "" if first.startswith(("got ", "missing ", "takes ")) else " is wrong: ")
    lead = f"{_owner(ctx, prim)}'s batching rule{joint}{first[:1].lower() + first[1:]}"
    defect = " ".join(t.rstrip(".") + "." for t in [lead, *rest])
    message = (f"{defect} Seen when called by {call.variant.describe(name)}: {call.describe()}."
               f"{_CONSEQUENCE.get(problem.rule.code, '')}{others}")
    location = _return_location(rule_fn, call.return_line, problem.rule, ctx.subject.location)
    if problem.rule is rules.WRONG_RULE_SIGNATURE:
        fix = _signature_fix(prim, call.params)
    else:
        fix = _structure_fix(ev, prim, call, problem, suggestions)
    return problem.rule.finding(
        evidence=message,
        fix=fix,
        location=location)


def _display(ctx: Context, prim: Any) -> str:
    """How vmap's argument is named in messages: `my_p.bind` for a primitive, the function's name otherwise."""
    if ctx.subject.kind == "primitive" and prim is ctx.subject.obj:
        return f"{prim_var(ctx.subject)}.bind"
    if ctx.subject.kind == "function":
        return ctx.subject.name
    return f"{prim.name}.bind"


def _owner(ctx: Context, prim: Any) -> str:
    if ctx.subject.kind == "primitive" and prim is ctx.subject.obj:
        return prim_var(ctx.subject)
    return prim.name


def _other_variants(calls: list[RuleCall], first: RuleCall, name: str) -> str:
    others = [c for c in calls if c.variant != first.variant]
    return f" Also with {_variant_list(others, name)}." if others else ""


def _variant_list(calls: list[RuleCall], name: str) -> str:
    labels = list(dict.fromkeys(c.variant.describe(name) for c in calls))
    return "; ".join(labels[:3] + ([f"{len(labels) - 3} more"] if len(labels) > 3 else []))


def _return_location(rule_fn: Any, line: int | None, rule: rules.Rule, fallback: Location | None
                     ) -> Location | None:
    """The faulty `return` line when known; the `def` line when a `# jaxdiag: ignore[...]` there names the rule
    (suppressions live on the def line)."""
    base = rule_location(rule_fn, fallback)
    if base is None or line is None or rule_fn is None or not _locate.is_user_code(rule_fn):
        return base
    ignored = _locate.inline_ignores(base)
    if ignored and ("*" in ignored or rules.matches(rule.code, sorted(ignored))):
        return base
    return Location(base.path, line, base.function)


def _signature_fix(prim: Any, params: dict[str, Any]) -> str:
    rule = _compat.batching_rule(prim)
    fn_name = getattr(_locate.unwrap(rule), "__name__", "rule")
    if _compat.batching_rule_leading_args(prim) == 3:
        return (f"`{fn_name}` is registered in batching.axis_primitive_batchers, so JAX calls it as "
                f"`{fn_name}(axis_size, axis_name, trace_type, batched_args, batch_dims, **params)`: accept "
                "those arguments.")
    if _compat.batching_rule_is_fancy(prim):
        return (f"`{fn_name}` is registered in batching.fancy_primitive_batchers, so JAX calls it as "
                f"`{fn_name}(axis_data, batched_args, batch_dims, **params)`: accept those arguments.")
    params_text = ", ".join(sorted(params))
    return (f"JAX calls `{fn_name}(batched_args, batch_dims, **params)`"
            + (f" and passes {params_text} as keywords" if params else "")
            + f": use the signature `def {fn_name}(batched_args, batch_dims, **params)` (an `axis_data` first "
              "argument belongs to rules registered in batching.fancy_primitive_batchers).")


def _structure_fix(ev: Evidence, prim: Any, call: RuleCall, problem: Problem, suggestions: dict[int, str]) -> str:
    rule_fn = _compat.batching_rule(prim)
    multiple = bool(prim.multiple_results)
    k = problem.output
    n = len(call.expected) if call.expected is not None else None
    advice = _advice(ev, call, problem, suggestions)
    where = f" (line {call.return_line})" if call.return_line else ""
    if problem.rule in (rules.MULTIPLE_RESULTS_STRUCTURE, rules.RULE_RETURN_NOT_PAIR):
        line = corrected_return(rule_fn, call.return_line, dict(suggestions), multiple) if rule_fn else None
        if line:
            what = "one dim per output" if multiple else "the array itself and one dim"
            return f"Return {what}{where}: `{line}`.{advice}"
        dims = ", ".join(suggestions.get(i, "d") for i in range(n or 1))
        outs = ", ".join(f"out{i}" for i in range(n or 1))
        shape = (f"`return [{outs}], [{dims}]` (a sequence of {n} outputs and a sequence of {n} dims)" if multiple
                 else f"`return out, {suggestions.get(0, 'd')}` (the array itself and an int or None)")
        return f"Return {shape}.{advice}"
    fixes = dict(suggestions)
    if k is not None and k not in fixes and problem.rule is rules.BATCH_DIM_WRONG_TYPE:
        fixes[k] = f"int({_dims_source(rule_fn, call, k) or 'd'})"
    line = corrected_return(rule_fn, call.return_line, fixes, multiple) if fixes and rule_fn is not None else None
    if problem.rule is rules.BATCHED_SHAPE_MISMATCH:
        line = _without_keepdims(rule_fn, call.return_line)
    if line:
        return f"{advice.strip()} Return{where}: `{line}`".strip()
    return advice.strip() or "Return, for each output, the axis where its batch actually is (or None)."


def _without_keepdims(rule_fn: Any, line: int | None) -> str | None:
    """The return statement without `keepdims=True`, the usual source of an extra size-1 axis."""
    found = _function_node(rule_fn) if rule_fn is not None and line is not None else None
    if found is None:
        return None
    node, offset, source = found
    target = next((r for r in own_nodes(node) if isinstance(r, ast.Return) and r.lineno + offset == line), None)
    text = ast.get_source_segment(source, target) if target is not None else None
    if not text or "keepdims=True" not in text:
        return None
    return text.replace(", keepdims=True", "").replace("keepdims=True, ", "").replace("keepdims=True", "")


def _dims_source(rule_fn: Any, call: RuleCall, k: int) -> str | None:
    nodes = [r for line, r in return_nodes(rule_fn) if line == call.return_line] if rule_fn else []
    if not nodes or not isinstance(nodes[0].value, ast.Tuple) or len(nodes[0].value.elts) != 2:
        return None
    found = _function_node(rule_fn)
    dims = nodes[0].value.elts[1]
    if isinstance(dims, (ast.Tuple, ast.List)) and k < len(dims.elts):
        dims = dims.elts[k]
    return ast.get_source_segment(found[2], dims) if found else None


def wrong_value_outputs(ev: Evidence, prim: Any) -> set[int]:
    """Outputs for which no axis (and not None) reproduces the per-example results in some measured call."""
    out: set[int] = set()
    for call in ev.calls:
        if call.prim is prim:
            measured = measured_dims(call, ev.reference) or []
            out |= {k for k, d in enumerate(measured) if d is WRONG_VALUES}
    return out


def _dropped_axis_hint(rule_fn: Any) -> str:
    """Name what in the user's rule can lose a batch axis, only if the rule contains it."""
    found = rule_constructs(rule_fn)
    hints = [f"`{found['index']}` indexes one example" if "index" in found else "",
             f"`{found['reduction']}` computes along an axis" if "reduction" in found else "",
             f"`{found['axis_move']}` moves axes" if "axis_move" in found else ""]
    hints = [h for h in hints if h]
    return f" In the rule, {' and '.join(hints)}: check which axis it removes or moves." if hints else ""


def _advice(ev: Evidence, call: RuleCall, problem: Problem, suggestions: dict[int, str]) -> str:
    k = problem.output
    rule = problem.rule
    if k is None:
        return ""
    label = f"output {k}" if call.prim.multiple_results else "the output"
    title = label[:1].upper() + label[1:]
    suggestion = suggestions.get(k)
    rule_fn = _compat.batching_rule(call.prim)
    if rule in (rules.BATCH_AXIS_SIZE_MISMATCH, rules.BATCH_DIM_OUT_OF_RANGE) and k in wrong_value_outputs(
            ev, call.prim):
        return (f" No axis of {label} (and not None) reproduces the per-example results: the rule computes the wrong "
                f"values, not just the wrong dim, so changing the returned dim cannot fix it."
                f"{_dropped_axis_hint(rule_fn)}")
    if rule is rules.BATCH_AXIS_SIZE_MISMATCH and suggestion == "None":
        return (f" {title} is the same for every example (it does not depend on the batch): return None as its "
                "dim, and JAX broadcasts it where a batch axis is needed.")
    if rule in (rules.BATCH_AXIS_SIZE_MISMATCH, rules.BATCH_DIM_OUT_OF_RANGE) and suggestion is not None:
        where = f"dim {suggestion}" if suggestion.lstrip("-").isdigit() else f"`{suggestion}`"
        return (f" {title}'s batch axis is at {where}: jaxdiag moved each axis of {label} to the front and compared "
                "with the per-example results, and only that one matches.")
    if rule is rules.BATCH_AXIS_SIZE_MISMATCH:
        return (f" The rule loses the batch axis of {label}: keep it, and return where it is."
                f"{_dropped_axis_hint(rule_fn)}")
    if rule is rules.BATCH_DIM_OUT_OF_RANGE:
        return f" Return the axis of {label} that carries the batch (0 <= dim < out.ndim), or None."
    if rule is rules.BATCH_DIM_WRONG_TYPE:
        return " Return a plain Python int (or None) for each dim, e.g. the element `batch_dims[i]`, not the tuple."
    if rule is rules.BATCHED_SHAPE_MISMATCH:
        return (f" {title} must be one example's output with a batch axis inserted (no keepdims axis, no "
                "squeezed axis, the same dtype as the impl's).")
    return ""


def _raised_finding(ctx: Context, raised: list[RuleCall]) -> Finding:
    call = raised[0]
    exc = call.error
    assert exc is not None
    prim, name = call.prim, _display(ctx, call.prim)
    rule_fn = _compat.batching_rule(prim)
    generic = _compat.generic_batcher_name(prim) if prim is ctx.subject.obj else None
    location = (user_frame_location(exc, rule_fn) if rule_fn is not None and _locate.is_user_code(rule_fn)
                else None) or (registration_location(ctx.subject, generic) if generic else None) or rule_location(
        rule_fn, ctx.subject.location)
    if removed_api(exc):
        where = f"{_owner(ctx, prim)}'s batching rule (called by {call.variant.describe(name)})"
        return removed_api_finding(exc, where, location)
    others = _other_variants(raised, call, name)
    passed = [o.variant for o in evidence(ctx).outcomes if o.ok]
    message = (f"{_owner(ctx, prim)}'s batching rule raised {first_line(exc)} when called by "
               f"{call.variant.describe(name)}: "
               f"{call.describe()}.{others}")
    if passed:
        message += f" It works for {passed[0].describe(name)}."
    fix = _generic_raised_fix(ctx, generic, raised) if generic else _raised_fix(call, exc, raised, passed)
    on_purpose = rule_fn is not None and _locate.is_user_code(rule_fn) and raises_on_purpose(exc, rule_fn)
    if on_purpose and passed:  # the rule drew a line: what it refuses is its contract, what it accepts was checked
        return rules.BATCH_DIMS_REFUSED.finding(
            owner=_owner(ctx, prim), refused=_variant_list(raised, name),
            error=first_line(exc), works=passed[0].describe(name), location=location)
    return (rules.BATCHING_RULE_REFUSES if on_purpose else rules.BATCHING_RULE_RAISED).finding(
        evidence=message,
        fix=fix,
        location=location)


def _generic_raised_fix(ctx: Context, helper: str, raised: list[RuleCall]) -> str:
    """JAX's generic batcher raised: say what it requires, and the registration that fits."""
    var = prim_var(ctx.subject)
    mixed = any(len(set(c.in_dims)) > 1 for c in raised)
    if helper == "defvectorized" and mixed:
        return (f"`batching.defvectorized({var})` requires every argument to be batched along the same dim; vmap "
                "also passes unbatched arguments (dim None) and other dims. For an elementwise primitive whose impl "
                f"broadcasts, register `batching.defbroadcasting({var})` instead, which aligns the arguments first.")
    return (f"`batching.{helper}({var})` cannot batch this primitive for batch_dims "
            f"{_axes_repr(tuple(raised[0].in_dims))}: register your own rule in batching.primitive_batchers that "
            "moves each batched argument to the front (`batching.bdim_at_front`) and binds there.")


def _raised_fix(call: RuleCall, exc: BaseException, raised: list[RuleCall] | None = None,
                passed: list | None = None) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, RecursionError):  # the spy's stack walk told the user's recursion from jaxdiag's own
        return ("The rule re-enters itself without end: it binds its own primitive under `jax.vmap` (or vmaps a "
                "function that does), and vmap calls this rule again for that bind, until Python's recursion limit. "
                "Compute the batched result without vmapping the primitive: with the batch axis moved to the front "
                "(`batching.bdim_at_front`), bind it once if its impl and lowering take a leading batch axis, or "
                "loop over the examples with `jax.lax.map`, or write the batched computation in jax.numpy.")
    unbatched_only = bool(raised) and bool(passed) and all(None in c.in_dims for c in raised or []) and all(
        None not in v.axes for v in passed or [])
    if call.in_dims and all(d is None for d in call.in_dims):
        return ("A rule registered in batching.fancy_primitive_batchers is called even when no input is batched "
                "(constants inside a vmapped function): when every dim is None, return `prim.bind(*args, **params)` "
                "with None dims, or register the rule through batching.primitive_batchers, which does that for you.")
    if any(d is None for d in call.in_dims) and ("NoneType" in text or "None" in text or unbatched_only):
        return ("Handle unbatched arguments (dim None): `batching.bdim_at_front(x, d, size)` moves a batched axis "
                "to the front and broadcasts an unbatched argument, e.g.\n" + _front_lines(call))
    if call.variant.mode in ("jit(vmap)", "vmap(jit)") or "Tracer" in text:
        return ("The rule needs concrete values (NumPy, `int(...)`, Python `if` on an array), which it does not "
                "get under jit: compute with jax.numpy on the traced values.")
    dims = _axes_repr(tuple(call.in_dims))
    return f"Make the rule work for batch_dims={dims} (any input may be batched along any axis, or be None)."


def _front_lines(call: RuleCall) -> str:
    """`size = ...` and one `bdim_at_front` line per argument, with the rule's own names."""
    rule = _compat.batching_rule(call.prim)
    leading = _compat.batching_rule_leading_args(call.prim)
    n = len(call.in_dims)
    args = _rule_names(rule, leading, n, "batched_args")
    dims = _dim_names(rule, leading, n)
    size = " else ".join(f"{a}.shape[{d}] if {d} is not None" for a, d in list(zip(args, dims))[:-1])
    last = f"{args[-1]}.shape[{dims[-1]}]"
    lines = [f"size = {size + ' else ' + last if size else last}"]
    lines += [f"{a} = batching.bdim_at_front({a}, {d}, size)" for a, d in zip(args, dims)]
    return "\n".join(f"    {line}" for line in lines) + "\nthen compute with the batch axis at 0 and return 0."
