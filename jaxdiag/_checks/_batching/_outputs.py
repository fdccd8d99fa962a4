"""Checks on the outputs' batch axes: unbatched outputs reported batched (JXB003), out_axes (JXB011) and the
user's --in-axes/--out-axes (JXB012), with the explanation of JAX's own vmap errors.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import jax

from ... import _compat
from ..._core import _locate
from ... import _rules as rules
from ..._core._report import Finding, Location
from .._base import Context, SkipCheck, check
from ..._harness import call_user
from .._shared import (
    aval_text, example_output, first_line, is_user_primitive, prim_var, primitive_module, rule_location,
)
from ._evidence import EVIDENCE_READS, Evidence, _run, evidence
from .._vmap_harness import Variant, vmapped
from .._vmap_harness import axes_repr as _axes_repr
from ._rule_returns import _display, _return_location
from ..._harness.source import module_tree, own_nodes, return_nodes
from ._source import _function_node, corrected_return
from ._spy import RuleCall, Spy
from ._vs_loop import _returning_line_of, _subject_display

# ---------------------------------------------------------------------------------------------------------------
# Check: unbatched outputs reported batched (JXB003)
# ---------------------------------------------------------------------------------------------------------------


@check("batching-unbatched-outputs", family="batching", kinds={"primitive"}, reads=EVIDENCE_READS)
def unbatched_outputs_check(ctx: Context) -> Iterator[Finding]:
    if not is_user_primitive(ctx.subject):
        raise SkipCheck("JAX's own primitive: constant outputs are not checked")
    ev = evidence(ctx)
    call = next((c for c in ev.calls if c.top and c.variant.mode == "eager" and not c.problems and c.error is None
                 and c.variant.pattern == frozenset() and c.out_dims is not None and c.variant.size > 1), None)
    if call is None:
        return
    independent = _independent_outputs(ctx)
    for k, d in enumerate(call.out_dims or []):
        if d is None or ev.reference.constant(frozenset(), k, ev.reference.count) is not True:
            continue
        if independent is not None and k not in independent:
            continue
        yield _constant_finding(ctx, ev, call, k)


def _independent_outputs(ctx: Context) -> set[int] | None:
    """Outputs of the impl's jaxpr that depend on no input; None when the impl cannot be traced."""
    impl = _compat.impl(ctx.subject.obj)
    if impl is None:
        return None
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in ctx.specs]
    traced = call_user(jax.make_jaxpr(lambda *a: impl(*a, **ctx.subject.params)), *shapes)
    if traced.error is not None:
        return None
    return {k for k, dep in enumerate(_compat.output_dependence(traced.value)) if not dep}


def _constant_finding(ctx: Context, ev: Evidence, call: RuleCall, k: int) -> Finding:
    prim, name = ctx.subject.obj, _display(ctx, ctx.subject.obj)
    assert call.out_dims is not None  # the caller picked a call whose return was recorded
    rule_fn = _compat.batching_rule(prim)
    line = _returning_line_of(ev, call)
    shape = call.expected[k] if call.expected else None
    multiple = bool(prim.multiple_results)
    out_axes: Any = [None if j == k else 0 for j in range(len(call.out_dims or []))] if multiple else None
    jax_error = _out_axes_error(ev, call, out_axes)
    what = f" ({aval_text(*shape)})" if shape else ""
    message = (f"Output {k}{what} of {prim_var(ctx.subject)} is the same for every one of {ev.reference.count} "
               "random examples and depends on no input, but the batching rule reports it batched "
               f"(dim {call.out_dims[k]}) for "
               f"{call.variant.describe(name)}: vmap materialises {call.variant.size} copies, and "
               f"`jax.vmap(..., out_axes={_axes_repr(out_axes)})` fails"
               + (f" with `{jax_error}`." if jax_error else "."))
    fixed = corrected_return(rule_fn, line, {k: "None"}, multiple) if rule_fn is not None else None
    fix = (f"Return None as output {k}'s dim (and the unbroadcast value); JAX broadcasts it when out_axes asks for "
           "a batch axis" + (f": `{fixed}`." if fixed else "."))
    return rules.MISSING_NONE_FOR_UNBATCHED_OUTPUT.finding(
        evidence=message,
        fix=fix,
        location=_return_location(rule_fn, line, rules.MISSING_NONE_FOR_UNBATCHED_OUTPUT,
                                                     ctx.subject.location))


def _out_axes_error(ev: Evidence, call: RuleCall, out_axes: Any) -> str | None:
    variant = call.variant
    ran = call_user(jax.vmap(ev.fn, in_axes=variant.axes, out_axes=out_axes), *ev.reference.batched_args(variant))
    return first_line(ran.error) if ran.error is not None else None


# ---------------------------------------------------------------------------------------------------------------
# Check: out_axes (JXB011) and the user's --in-axes/--out-axes (JXB012)
# ---------------------------------------------------------------------------------------------------------------


@check("batching-out-axes", family="batching", kinds={"primitive", "function"}, reads=EVIDENCE_READS)
def out_axes_check(ctx: Context) -> Iterator[Finding]:
    wrappers = _list_wrappers(ctx) if ctx.subject.parent is None or ctx.subject.kind == "function" else []
    if ctx.options.in_axes is None and ctx.options.out_axes is None and not wrappers:
        return  # nothing to reproduce: do not run the variants for this check alone
    ev = evidence(ctx)
    yield from _user_axes(ctx, ev)
    yield from _list_outputs(ctx, ev, wrappers)


@check("batching-out-axes-none", family="batching", kinds={"primitive"}, reads=EVIDENCE_READS)
def out_axes_none_check(ctx: Context) -> Iterator[Finding]:
    """`out_axes=None` must work for every output the rule reports unbatched, and give one example's value."""
    if not is_user_primitive(ctx.subject):
        raise SkipCheck("JAX's own primitive")
    ev = evidence(ctx)
    call = next((c for c in ev.calls if c.top and c.variant.mode == "eager" and c.variant.pattern == frozenset()
                 and c.out_dims is not None and not c.problems and c.variant.size > 1), None)
    if call is None or call.out_dims is None or None not in call.out_dims:
        return
    multiple = bool(ctx.subject.obj.multiple_results)
    unbatched = [k for k, d in enumerate(call.out_dims) if d is None]
    if any(ev.reference.constant(frozenset(), k, call.variant.size) is False for k in unbatched):
        return  # JXB010 reports it
    out_axes: Any = [None if d is None else 0 for d in call.out_dims] if multiple else None
    variant = replace(call.variant, mode="user", user_in_axes=call.variant.axes, out_axes=out_axes)
    if _traces(ev, variant):
        return
    outcome = _run(ev.fn, ev.reference, Spy(ctx.subject, ev.expected_at_subject), [], variant)
    if outcome.error is None:
        return
    explanation = explain_vmap_error(outcome.error, variant, ctx, ev)
    yield rules.VMAP_CALL_FAILED.finding(
        evidence=f"{variant.describe(_subject_display(ctx))} fails although the rule reports output(s) {unbatched} "
        f"unbatched: {first_line(outcome.error)}. {explanation[0]}",
        fix=explanation[1],
        location=rule_location(_compat.batching_rule(ctx.subject.obj), ctx.subject.location))


def _traces(ev: Evidence, variant: Variant) -> bool:
    """`vmap` checks out_axes while tracing, and the values already ran with out_axes 0: a variant that traces
    needs no run (no compilation of the rule's operations again); one that does not is run to report what fails."""
    args = ev.reference.batched_args(variant)
    return call_user(jax.make_jaxpr(vmapped(ev.fn, variant)), *args).error is None


def _user_axes(ctx: Context, ev: Evidence) -> Iterator[Finding]:
    user = next((o for o in ev.outcomes if o.variant.mode == "user"), None)
    if user is None or user.error is None:
        return  # ran (its defects are reported with the other variants) or was not asked for
    name = _subject_display(ctx)
    explanation = explain_vmap_error(user.error, user.variant, ctx, ev)
    yield rules.VMAP_CALL_FAILED.finding(
        evidence=f"{user.variant.describe(name)} fails: {first_line(user.error)}. {explanation[0]}",
        fix=explanation[1],
        location=ctx.subject.location)


def explain_vmap_error(exc: BaseException, variant: Variant, ctx: Context, ev: Evidence) -> tuple[str, str]:
    """(what went wrong in plain words, what to change) for JAX's vmap errors about axes."""
    text = str(exc)
    specs = ctx.specs
    list_output = ctx.subject.kind == "primitive" and bool(ctx.subject.obj.multiple_results)
    if "tree prefix" in text and "out_axes" in text:
        if list_output and isinstance(variant.out_axes, tuple):
            return (f"{ctx.subject.name} returns a list (it is a multiple_results primitive), and a tuple is not a "
                    "prefix of a list.", f"Pass a list: --out-axes {_axes_repr(list(variant.out_axes))}, or wrap the "
                                          "call in a function returning `tuple(prim.bind(...))`.")
        return ("out_axes must mirror the structure of the output (the same containers, or a single int/None for "
                "everything).", "Give one entry per output in the output's own container type, or a single axis.")
    if "tree prefix" in text or "in_axes must be" in text:
        return (f"in_axes needs one entry per positional argument; {ctx.subject.name} takes {len(specs)}.",
                f"Pass {len(specs)} comma-separated axes, e.g. --in-axes {','.join('0' for _ in specs)}.")
    if "requested to map its argument along axis" in text:
        ranks = ", ".join(f"argument {i}: {len(s.shape) + 1} (valid axes -{len(s.shape) + 1}..{len(s.shape)})"
                          for i, s in enumerate(specs))
        return (f"An axis is beyond the rank of its batched argument ({ranks}).",
                "Choose an axis within the batched argument's rank (the per-example rank + 1).")
    if "got axis spec None but output was batched" in text:
        k = _index_in(text)
        constant = ev.reference.constant(frozenset(), k, ev.reference.count) if k is not None else None
        if constant:
            return (f"Output {k} is the same for every example, but the batching rule reports it batched.",
                    f"Return None as output {k}'s dim in the batching rule (see "
                    f"{rules.MISSING_NONE_FOR_UNBATCHED_OUTPUT.code}), then out_axes=None works.")
        return (f"Output {k} differs from example to example, so it cannot be returned unbatched.",
                f"Use an integer out_axes for output {k}.")
    if "at least one non-None value" in text:
        return ("Every argument is unbatched, so there is nothing to map over.",
                "Give at least one argument an integer axis.")
    if "out of bounds for array of dimension" in text:
        return ("An out_axes entry is beyond the rank of its batched output (the per-example rank + 1).",
                "Use an out_axes between -(rank+1) and rank for each output.")
    return ("JAX rejected this vmap call.", "Check that in_axes has one entry per argument and out_axes mirrors the "
                                            "output.")


def _index_in(text: str) -> int | None:
    import re

    match = re.search(r"out_axes\[(\d+)\]", text)
    return int(match.group(1)) if match else (0 if "out_axes," in text or "out_axes " in text else None)


def _list_outputs(ctx: Context, ev: Evidence, wrappers: list[tuple[Callable, Any, str, int]]
                  ) -> Iterator[Finding]:
    """JXB011: a wrapper returning `prim.bind(...)` of a multiple_results primitive returns a list, so a tuple
    out_axes fails. Found in the function's own source, or, for a primitive, among its module's functions."""
    for wrapper, prim, var, node_line in wrappers:
        if prim is None or not prim.multiple_results:
            continue
        finding = _tuple_out_axes(ctx, ev, wrapper, prim, var, node_line)
        if finding is not None:
            yield finding


def _list_wrappers(ctx: Context) -> list[tuple[Callable, Any, str, int]]:
    subject = ctx.subject
    if subject.kind == "function":
        fn = _locate.unwrap(subject.obj)
        return [(subject.obj, prim, var, line) for prim, var, line in _returns_bind(fn)]
    if not is_user_primitive(subject):
        return []
    module = primitive_module(subject)
    if module is None:
        return []
    out: list[tuple[Callable, Any, str, int]] = []
    for value in vars(module).values():
        if inspect.isfunction(value) and value.__module__ == module.__name__:
            out += [(value, prim, var, line) for prim, var, line in _returns_bind(value) if prim is subject.obj]
    return out


def _returns_bind(fn: Any) -> list[tuple[Any, str, int]]:
    """(primitive, its variable name, line) for each `return <prim>.bind(...)` in `fn`, the primitive resolved in
    its globals."""
    out = []
    for line, node in return_nodes(fn):
        value = node.value
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "bind"
                and isinstance(value.func.value, ast.Name)):
            prim = getattr(fn, "__globals__", {}).get(value.func.value.id)
            if _compat.is_primitive(prim):
                out.append((prim, value.func.value.id, line))
    return out


def _tuple_out_axes(ctx: Context, ev: Evidence, wrapper: Callable, prim: Any, var: str, line: int
                    ) -> Finding | None:
    """Run the wrapper under vmap with a tuple out_axes; report when JAX rejects it as not a tree prefix."""
    n = _n_outputs(ctx, ev, prim)
    if n is None or n < 2:
        return None
    # A wrapper returning bind's list is correct code; it is only a defect where a tuple out_axes is used on it:
    # `--out-axes (0, None)`, or a `vmap(wrapper, out_axes=(...))` call in the user's module.
    if isinstance(ctx.options.out_axes, tuple) and len(ctx.options.out_axes) == n:
        out_axes = ctx.options.out_axes
    else:
        used = _source_tuple_out_axes(wrapper)
        if used is None or len(used) != n:
            return None
        out_axes = used
    args = ev.reference.batched_args(Variant(tuple(0 for _ in ctx.specs), ev.outcomes[0].variant.size))
    ran = call_user(jax.vmap(wrapper, out_axes=out_axes), *args)
    if ran.error is None or "tree prefix" not in str(ran.error):
        return None
    error = first_line(ran.error).rstrip(";: ")
    wrapper_name = getattr(_locate.unwrap(wrapper), "__name__", "f")
    base = _locate.locate(wrapper)
    bind_text = _bind_source(wrapper, line)
    location = base
    if base is not None and not (_locate.inline_ignores(base) or set()) & {"*", rules.OUT_AXES_TUPLE_FOR_LIST.code}:
        location = Location(base.path, line, base.function)
    message = (f"{wrapper_name} returns `{bind_text}` directly, and {var} is a multiple_results primitive, so "
               f"bind returns a list of {n}; `jax.vmap({wrapper_name}, out_axes={_axes_repr(out_axes)})` therefore "
               f"fails: {error} (a tuple is not a prefix of a list).")
    return rules.OUT_AXES_TUPLE_FOR_LIST.finding(
        evidence=message,
        fix=f"Return a tuple from {wrapper_name}: `return tuple({bind_text})`, or pass a list: "
                     f"`out_axes={_axes_repr(list(out_axes))}`.",
        location=location)


def _source_tuple_out_axes(wrapper: Callable) -> tuple | None:
    """The tuple out_axes of a `jax.vmap(wrapper, ..., out_axes=(...))` call in the wrapper's module, if any."""
    fn = _locate.unwrap(wrapper)
    name = getattr(fn, "__name__", None)
    module = inspect.getmodule(fn)
    tree = module_tree(module) if name else None
    for node in ast.walk(tree) if tree is not None else ():
        if not (isinstance(node, ast.Call) and node.args and _is_vmap(node.func)):
            continue
        target = node.args[0]
        if not ((isinstance(target, ast.Name) and target.id == name)
                or (isinstance(target, ast.Attribute) and target.attr == name)):
            continue
        for kw in node.keywords:
            if kw.arg == "out_axes" and isinstance(kw.value, ast.Tuple):
                try:
                    return tuple(ast.literal_eval(kw.value))
                except ValueError:
                    return None
    return None


def _is_vmap(func: ast.expr) -> bool:
    return (isinstance(func, ast.Name) and func.id == "vmap") or (isinstance(func, ast.Attribute)
                                                                  and func.attr == "vmap")


def _bind_source(fn: Any, line: int) -> str:
    found = _function_node(fn)
    if found is not None:
        node, offset, source = found
        for r in own_nodes(node):
            if isinstance(r, ast.Return) and r.lineno + offset == line and r.value is not None:
                return ast.get_source_segment(source, r.value) or ast.unparse(r.value)
    return "prim.bind(...)"


def _n_outputs(ctx: Context, ev: Evidence, prim: Any) -> int | None:
    if ctx.subject.kind == "primitive":
        return len(ev.expected_at_subject) if ev.expected_at_subject is not None else None
    leaves = next((o.leaves for o in ev.outcomes if o.leaves is not None), None)
    return len(leaves) if leaves is not None else len(example_output(ctx).leaves or [])
