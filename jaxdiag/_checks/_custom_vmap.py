"""custom_vmap checks (JXV): run the function under `vmap` against the per-example loop, and validate what the
user's rule returns before JAX sees it.

JAX checks only the pytree structure of `(out, out_batched)`. It never checks that an output declared batched has
the batch axis in front with size `axis_size`, nor that an output declared unbatched is the same for every example:
both are silently wrong. The rule is wrapped for the duration of the run
(`_compat.spy_custom_vmap_rule`); a defect found in what it returns aborts that vmap with `_RuleDefect`, so the
user sees jaxdiag's explanation rather than JAX's `IndexError`.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compat
from .._core import _locate
from .._loading import _numerics
from .. import _rules as rules
from .._core._report import Finding, Location
from ._base import Context, SkipCheck, check
from .._harness import Signal, call_user, jaxdiag_code
from ._vmap_harness import Reference, Variant, first_line, loop_variants, vmapped

# ---------------------------------------------------------------------------------------------------------------
# Validating what the rule returns
# ---------------------------------------------------------------------------------------------------------------


class _RuleDefect(Signal):
    """Raised from inside the wrapped rule to stop JAX from consuming a defective result."""

    def __init__(self, finding: Finding):
        super().__init__(finding.message)
        self.finding = finding


@dataclass
class _Target:
    """What every finding needs to know about the custom_vmap under test."""

    rule: Callable
    rule_name: str
    location: Location | None
    fn_name: str
    out_tree: Any  # per-example output: a pytree of ShapeDtypeStruct
    labels: list[str] = field(default_factory=list)  # one per output leaf: "the output", "output[1]", ...
    call: Callable | None = None  # the function itself, for the output shapes of a call on other operands
    example_shapes: list[tuple[int, ...]] = field(default_factory=list)  # one example's operand shapes

    def for_call(self, in_batched: Any, args: Any) -> "_Target":
        """This target as one call of its rule sees it: a rule may call its own function again on other operands
        (a batch of batches merged into one batch axis), whose examples have other shapes, so other outputs."""
        flags, leaves = jax.tree_util.tree_leaves(in_batched), jax.tree_util.tree_leaves(args)
        if self.call is None or len(flags) != len(leaves):
            return self
        one = [jax.ShapeDtypeStruct(_shape(x)[1:] if b else _shape(x), x.dtype) for b, x in zip(flags, leaves)]
        if [tuple(s.shape) for s in one] == self.example_shapes:
            return self
        shaped = call_user(jax.eval_shape, self.call, *jax.tree_util.tree_unflatten(
            jax.tree_util.tree_structure(args), one))
        same_tree: bool = shaped.error is None and str(jax.tree_util.tree_structure(shaped.value)) == str(
            jax.tree_util.tree_structure(self.out_tree))
        if not same_tree:
            return self
        return replace(self, out_tree=shaped.value)

    @property
    def expected_leaves(self) -> list[Any]:
        return jax.tree_util.tree_leaves(self.out_tree)


def _labels(out_tree: Any) -> list[str]:
    paths = jax.tree_util.tree_flatten_with_path(out_tree)[0]
    if len(paths) == 1 and not paths[0][0]:
        return ["the output"]
    return [f"output{jax.tree_util.keystr(path)}" for path, _ in paths]


def _any_batched_like(t: _Target) -> str:
    """`any(in_batched)` (the rule's own parameter name) for each output leaf, in the output's structure."""
    import inspect

    try:
        params = list(inspect.signature(_locate.unwrap(t.rule)).parameters)
    except (TypeError, ValueError):
        params = []
    flag = f"any({params[1]})" if len(params) > 1 else "True"
    return _all_true_like(t.out_tree).replace("True", flag)


def _return_with_flags(t: _Target, flags: str, unwrap: bool = False) -> str:
    """The rule's own `return value, flags` with the flags replaced (`return out, flags` when the rule does not
    end in one such return). `unwrap`: a one-element list or tuple around the flag of a single output keeps the
    user's own flag (`[x_batched]` -> `x_batched`)."""
    import ast
    import inspect
    import textwrap

    try:
        source = textwrap.dedent(inspect.getsource(_locate.unwrap(t.rule)))
        node = ast.parse(source).body[0]
    except (OSError, TypeError, SyntaxError, IndexError):
        return f"return out, {flags}"
    returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
    if len(returns) == 1 and isinstance(returns[0].value, ast.Tuple) and len(returns[0].value.elts) == 2:
        value = ast.get_source_segment(source, returns[0].value.elts[0])
        given = returns[0].value.elts[1]
        if unwrap and isinstance(given, (ast.List, ast.Tuple)) and len(given.elts) == 1 and len(
                jax.tree_util.tree_leaves(t.out_tree)) == 1:
            flags = ast.get_source_segment(source, given.elts[0]) or flags
        if value:
            return f"return {value}, {flags}"
    return f"return out, {flags}"


def _all_true_like(tree: Any) -> str:
    """The `out_batched` the user should return, written as Python (`True`, `(True, True)`, `{'a': True}`)."""
    return repr(jax.tree_util.tree_map(lambda _: True, tree))


def _shape(x: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in np.shape(x))


def _check_pair(t: _Target, result: Any, where: str) -> tuple[Any, Any]:
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return result[0], result[1]
    got = f"a {type(result).__name__}" + (f" of length {len(result)}" if isinstance(result, (tuple, list)) else "")
    if hasattr(result, "shape"):
        got += f" of shape {_shape(result)}"
    raise _RuleDefect(rules.VMAP_RULE_RAISED.finding(
        evidence=f"`{t.rule_name}` returned {got} instead of the pair `(out, out_batched)` ({where}). JAX unpacks it "
        "anyway: `ValueError: too many values to unpack`, or silently takes two rows of the output.",
        fix=f"End `{t.rule_name}` with `return out, {_all_true_like(t.out_tree)}` (the second item says which "
            "outputs carry the batch axis).",
        location=t.location))


def _check_structures(t: _Target, out: Any, out_batched: Any, where: str) -> list[bool]:
    """The flat out_batched flags; JXV001 when out, out_batched and the function's output disagree."""
    out_struct: Any = jax.tree_util.tree_structure(out)
    batched_leaves, batched_struct = jax.tree_util.tree_flatten(out_batched)
    expected = jax.tree_util.tree_structure(t.out_tree)
    problem = None
    if out_struct != expected:
        problem = f"its output has structure {out_struct} but `{t.fn_name}` returns {expected} per example"
    elif batched_struct != out_struct:
        problem = f"`out_batched` has structure {batched_struct} but the output has structure {out_struct}"
    elif not all(isinstance(b, (bool, np.bool_)) for b in batched_leaves):
        kinds = sorted({type(b).__name__ for b in batched_leaves if not isinstance(b, (bool, np.bool_))})
        problem = f"`out_batched` holds {', '.join(kinds)} values instead of Python bools"
    if problem:
        raise _RuleDefect(rules.VMAP_OUT_BATCHED_STRUCTURE.finding(
            rule_name=t.rule_name,
            problem=problem,
            where=where,
            corrected_return=_return_with_flags(t, _all_true_like(t.out_tree), unwrap=True),
            location=t.location))
    return [bool(b) for b in batched_leaves]


def _axis_positions(shape: tuple[int, ...], per_example: tuple[int, ...], size: int) -> list[int]:
    """Positions k where removing an axis of length `size` from `shape` leaves the per-example shape."""
    return [k for k in range(len(shape)) if shape[k] == size and shape[:k] + shape[k + 1:] == per_example]


def _check_unbatched_leaf(t: _Target, i: int, shape: tuple[int, ...], size: int, where: str) -> None:
    per_example = tuple(t.expected_leaves[i].shape)
    if shape == per_example:
        return  # whether it really is the same for every example is checked against the loop
    found = _axis_positions(shape, per_example, size)
    what = (f"one example's shape {per_example} with a batch axis of size {size} at position {found[0]}" if found
            else f"not one example's shape {per_example}")
    raise _RuleDefect(rules.VMAP_DECLARED_UNBATCHED_VARIES.finding(
        evidence=f"`{t.rule_name}` declares {t.labels[i]} unbatched (`False` in out_batched) but returned shape "
                 f"{shape}: "
        f"{what} ({where}). JAX treats it as one value and broadcasts it to every example again, giving shape "
        f"{(size,) + shape}: silently wrong.",
        fix=f"In `{t.rule_name}`, mark {t.labels[i]} batched whenever an input is (it depends on the inputs): "
            f"`{_return_with_flags(t, _any_batched_like(t))}` (with the batch axis first).",
        location=t.location))


def _check_batched_leaf(t: _Target, i: int, shape: tuple[int, ...], size: int, where: str) -> None:
    per_example = tuple(t.expected_leaves[i].shape)
    if shape == (size,) + per_example:
        return
    found = [k for k in _axis_positions(shape, per_example, size) if k != 0]
    if found:
        k = found[-1] if found[-1] == len(shape) - 1 else found[0]
        place = "last (trailing)" if k == len(shape) - 1 else f"at position {k}"
        what = (f"the batch axis (size {size}) is {place}, not first. JAX reads axis 0 as the batch axis, so the "
                "result is silently transposed or garbled")
        fix = (f"In `{t.rule_name}`, put the batch axis first: `out = jnp.moveaxis(out, {k}, 0)` before "
               "returning (or build it batch-first, e.g. an einsum output that starts with the batch letter).")
    elif shape == per_example:
        what = (f"it has no batch axis: that is one example's shape. JAX fails with `IndexError: tuple index out "
                f"of range`, or misreads a dimension that happens to equal {size}")
        fix = (f"In `{t.rule_name}`, broadcast it to the batch, `jnp.broadcast_to(out, (axis_size, *out.shape))`, "
               "or declare it `False` in out_batched if it is the same for every example.")
    else:
        what = f"expected shape {(size,) + per_example} (batch axis first, then one example's shape {per_example})"
        fix = f"In `{t.rule_name}`, return {t.labels[i]} with shape (axis_size, *{per_example})."
    raise _RuleDefect(rules.VMAP_BATCH_AXIS_NOT_LEADING.finding(
        rule_name=t.rule_name,
        labels=t.labels[i],
        shape=shape,
        what=what,
        where=where,
        fix=fix,
        location=t.location))


def validate(t: _Target, result: Any, axis_size: int, where: str) -> list[bool]:
    """Check the rule's `(out, out_batched)`; raise _RuleDefect with the finding, else return the flat flags."""
    out, out_batched = _check_pair(t, result, where)
    flags = _check_structures(t, out, out_batched, where)
    for i, (leaf, batched) in enumerate(zip(jax.tree_util.tree_leaves(out), flags)):
        check_leaf = _check_batched_leaf if batched else _check_unbatched_leaf
        check_leaf(t, i, _shape(leaf), axis_size, where)
    return flags


def _user_line(exc: BaseException, rule_file: str | None) -> str:
    """` at file:line` of the innermost frame in the rule's own file (else the innermost non-library frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if rule_file and os.path.realpath(f.filename) == os.path.realpath(rule_file)]
    outside = [f for f in frames if _locate.is_user_file(f.filename)]
    candidates = mine or outside
    frame = candidates[-1] if candidates else None
    return f" at {_locate.relative_path(frame.filename)}:{frame.lineno}" if frame else ""


def _raised(t: _Target, exc: Exception, where: str) -> _RuleDefect:
    rule_file = t.location.path if t.location else None
    line = _user_line(exc, rule_file)
    if "nested inside" in where and "vmap_method" in str(exc):  # the rule's own batched call, batched again
        fix = (f"The foreign call `{t.rule_name}` makes{line} has no vmap_method: under an outer vmap (a batch of "
               "batches) JAX batches that call itself. Pass `vmap_method=\"sequential\"` there (one call per outer "
               "example), or one whose batched form the kernel handles (\"expand_dims\", \"broadcast_all\").")
    else:
        fix = (f"Make `{t.rule_name}` handle every `in_batched` combination: an argument whose flag is False has no "
               f"batch axis; broadcast it first{_broadcast_block(t.rule)} or branch on the flag.")
    return _RuleDefect(rules.VMAP_RULE_RAISED.finding(
        evidence=f"`{t.rule_name}` raised {first_line(exc)}{line} ({where}).", fix=fix, location=t.location))


def _broadcast_block(rule: Callable) -> str:
    """The broadcast of each unbatched argument, with the rule's own names, as an indented block:
        x_batched, y_batched = in_batched
        x = x if x_batched else jnp.broadcast_to(x, (axis_size, *x.shape))
    (the generic one-liner when the rule's signature is not `(axis_size, in_batched, *plain arguments)`)."""
    from .._harness import source

    found = source.function_source(rule)
    names = [a.arg for a in found.node.args.args] if found is not None else []
    if len(names) < 3 or found is None or found.node.args.vararg is not None:
        return " (`x = x if x_batched else jnp.broadcast_to(x, (axis_size, *x.shape))`)"
    size, flags, args = names[0], names[1], names[2:]
    lines = [f"    {', '.join(f'{a}_batched' for a in args)}{',' if len(args) == 1 else ''} = {flags}"]
    lines += [f"    {a} = {a} if {a}_batched else jnp.broadcast_to({a}, ({size}, *{a}.shape))" for a in args]
    return ", e.g.\n" + "\n".join(lines) + "\nat the top of the rule,"


@dataclass
class _Spy:
    """Wraps the user's rule: validates each result, records the flags it returned."""

    target: _Target
    variant: Variant
    calls: list[list[bool]] = field(default_factory=list)

    def make(self, rule: Callable) -> Callable:
        def spy(axis_size: int, in_batched: Any, *args: Any) -> Any:
            with jaxdiag_code("the custom_vmap spy"):
                where = (f"in_batched={list(in_batched)!r}, axis_size={axis_size}, under "
                         f"{self.variant.phrase(self.target.fn_name)}")
            ran = call_user(rule, axis_size, in_batched, *args)
            if ran.error is not None:  # the user's rule failed: a finding, never a crash
                with jaxdiag_code("reporting a custom_vmap rule that raised"):  # runs inside the user's vmap
                    defect = _raised(self.target, ran.error, where)
                raise defect from ran.error
            with jaxdiag_code("validating a custom_vmap rule's result"):  # a malformed result raises _RuleDefect
                self.calls.append(validate(self.target.for_call(in_batched, args), ran.value, axis_size, where))
            return ran.value

        spy.__name__ = getattr(rule, "__name__", "vmap_rule")  # JAX's own messages name the rule
        return spy


# ---------------------------------------------------------------------------------------------------------------
# Running one variant and comparing with the loop
# ---------------------------------------------------------------------------------------------------------------


def _compare_outputs(t: _Target, variant: Variant, got: list[Any], want: list[np.ndarray],
                     flags: list[bool] | None) -> Iterator[Finding]:
    for i, (g, w) in enumerate(zip(got, want)):
        comparison = _numerics.compare(g, w)
        if comparison.ok or comparison.nonfinite:
            continue
        in_batched = variant.in_batched
        reduction = _batch_reduction(g, w, len(variant.lead) - 1)
        if reduction is not None:
            yield rules.VMAP_BATCH_AGGREGATE.finding(
                rule_name=t.rule_name, fn_name=t.fn_name, reduction=reduction, label=t.labels[i],
                where=f"{variant.phrase(t.fn_name)}, in_batched={in_batched}", size=np.shape(w)[len(variant.lead) - 1],
                spread=f"values from {float(np.min(w)):.4g} to {float(np.max(w)):.4g}", location=t.location)
            return
        if flags is not None and not flags[i]:
            yield rules.VMAP_DECLARED_UNBATCHED_VARIES.finding(
                evidence=f"`{t.rule_name}` declares {t.labels[i]} unbatched (`False` in out_batched), but it differs "
                         f"from "
                f"example to example: {variant.phrase(t.fn_name)} (in_batched={in_batched}) gives "
                f"{comparison.describe()} against the per-example loop. JAX broadcast one value to every example.",
                fix=f"In `{t.rule_name}`, compute {t.labels[i]} per example (batch axis first) and mark it `True` "
                    "in out_batched.",
                location=t.location)
        else:
            yield rules.VMAP_RESULT_MISMATCH.finding(
                evidence=f"{variant.phrase(t.fn_name)} (the rule saw in_batched={in_batched}) differs from calling "
                f"`{t.fn_name}` on each example for {t.labels[i]}: {comparison.describe()}.",
                fix=f"Make `{t.rule_name}` compute what `{t.fn_name}` computes for this in_batched combination: "
                    "look at the branch taken when some arguments are unbatched (no batch axis).",
                location=t.location)
        return  # one mismatch per variant is enough to prove the defect


def _batch_reduction(got: Any, want: np.ndarray, axis: int) -> str | None:
    """The name of the reduction over batch axis `axis` of the per-example outputs `want` that `got` (the vmapped
    output, the same shape) equals at every example, when `got` does not vary along that axis: the rule aggregates
    across the batch by construction. None otherwise (one example's result for all is not an aggregate)."""
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape or g.ndim <= axis or g.shape[axis] < 2:
        return None
    first = np.take(g, 0, axis=axis)
    if not _numerics.compare(g, np.broadcast_to(np.expand_dims(first, axis), g.shape)).ok:
        return None  # varies along the batch: not one batch-wide value
    return _numerics.batch_aggregate(first, np.moveaxis(w, axis, 0))


def run_variant(ctx: Context, t: _Target, variant: Variant) -> list[Finding]:
    stacked = [ctx.draw(s, variant.lead) for s in ctx.specs]
    reference = Reference.stacked(ctx.subject, ctx.call, stacked, variant)
    want = reference.expected(variant)
    if isinstance(want, BaseException):
        exc = want
        raise SkipCheck(f"{t.fn_name} fails on a single example ({type(exc).__name__}: {exc})") from exc
    spy = _Spy(t, variant)
    try:
        with _compat.spy_custom_vmap_rule(ctx.subject.obj, spy.make):
            ran = call_user(vmapped(ctx.call, variant), *reference.batched_args(variant))
    except _RuleDefect as defect:
        return [defect.finding]
    if ran.error is not None:  # the rule's result passed validation, yet JAX failed: report it with the variant
        exc = ran.error
        return [rules.VMAP_RESULT_MISMATCH.finding(
            evidence=f"{variant.phrase(t.fn_name)} raises {first_line(exc)}, while calling `{t.fn_name}` on each "
                     f"example "
            "works.",
            fix=f"Check the dtypes and shapes `{t.rule_name}` returns against `{t.fn_name}`'s output.",
            location=t.location)]
    got = jax.tree_util.tree_leaves(ran.value)
    return list(_compare_outputs(t, variant, got, want, spy.calls[-1] if spy.calls else None))


def all_unbatched(ctx: Context, t: _Target, batch: int) -> list[Finding]:
    """Call the rule with every in_batched False, as JAX does under vmap of `jax.jvp` with unbatched tangents."""
    example = ctx.example()
    where = (f"every in_batched False, axis_size={batch}: JAX calls the rule like this under vmap of `jax.jvp` "
             "when the tangents are not batched")
    ran = call_user(t.rule, batch, [False] * len(example), *[_compat.device_array(x) for x in example])
    if ran.error is not None:
        return [_raised(t, ran.error, where).finding]
    result = ran.value
    try:
        flags = validate(t, result, batch, where)
    except _RuleDefect as defect:
        return [defect.finding]
    want = [np.asarray(x) for x in jax.tree_util.tree_leaves(ctx.call(*example))]
    got = [np.asarray(x) for x in jax.tree_util.tree_leaves(result[0])]
    for i, (g, w, batched) in enumerate(zip(got, want, flags)):
        comparison = _numerics.compare(g, np.broadcast_to(w, (batch,) + w.shape) if batched else w)
        if not (comparison.ok or comparison.nonfinite):
            return [rules.VMAP_RESULT_MISMATCH.finding(
                evidence=f"With {where}, `{t.rule_name}` returned {t.labels[i]} different from `{t.fn_name}` on the "
                         f"same "
                f"(unbatched) arguments: {comparison.describe()}.",
                fix=f"When no argument is batched, `{t.rule_name}` must return `{t.fn_name}(*args)` (declared "
                    "`False`), or that value broadcast to `axis_size` (declared `True`).",
                location=t.location)]
    return []


# ---------------------------------------------------------------------------------------------------------------
# grad outside vmap: a JAX limitation, reported as info
# ---------------------------------------------------------------------------------------------------------------


def _grad_error(fn: Callable, specs: Sequence[Any], args: Sequence[Any]) -> Exception | None:
    argnums = tuple(i for i, s in enumerate(specs) if s.is_float)
    if not argnums:
        return None

    def total(*a: Any) -> Any:
        return sum(jnp.sum(jnp.real(leaf)) for leaf in jax.tree_util.tree_leaves(fn(*a))
                   if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact))

    # JAX's own limitation, or the user's code: either way grad does not work here
    return call_user(jax.grad(total, argnums=argnums), *args).error


def grad_outside_vmap(ctx: Context) -> list[Finding]:
    subject = ctx.subject
    if subject.parent is not None:  # the parent may wrap it in custom_vjp / custom_jvp: then grad works
        parent = subject.parent
        if _grad_error(parent.call, parent.specs, [ctx.draw(s) for s in parent.specs]) is None:
            return []
    exc = _grad_error(ctx.call, ctx.specs, ctx.example())
    if exc is None:
        return []
    name = subject.name
    under_vmap = _grad_error(jax.vmap(ctx.call), ctx.specs, [ctx.draw(s, (2,)) for s in ctx.specs])
    works = f" (`grad` of `vmap({name})` works)" if under_vmap is None else ""
    return [rules.VMAP_GRAD_LIMITATION.finding(
        name=name,
        error=first_line(exc).split('. ')[0],
        works=works,
        location=subject.location)]


# ---------------------------------------------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------------------------------------------


def _target(ctx: Context, rule: Callable) -> _Target:
    shaped = call_user(jax.eval_shape, ctx.call, *ctx.example())
    if shaped.error is not None:
        exc = shaped.error
        raise SkipCheck(f"{ctx.subject.name} fails on one example ({type(exc).__name__}: {exc})") from exc
    out_tree = shaped.value
    name = getattr(_locate.unwrap(rule), "__name__", "the vmap rule")
    return _Target(rule=rule, rule_name=name, location=_locate.locate(rule) or ctx.subject.location,
                   fn_name=ctx.subject.name, out_tree=out_tree, labels=_labels(out_tree), call=ctx.call,
                   example_shapes=[tuple(np.shape(x)) for x in jax.tree_util.tree_leaves(ctx.example())])


def _no_rule(ctx: Context) -> Finding:
    name = ctx.subject.name
    return rules.VMAP_RULE_RAISED.finding(
        evidence=f"`{name}` is a custom_vmap without a vmap rule: `jax.vmap` fails with `AttributeError: No batching "
                 f"rule "
        f"defined for custom_vmap function {name} using def_vmap`.",
        fix=f"Define it: `@{name}.def_vmap` on a function `(axis_size, in_batched, *args) -> (out, out_batched)`.",
        location=ctx.subject.location)


@check("custom-vmap", family="batching", kinds={"custom_vmap"})
def custom_vmap_rule(ctx: Context) -> Iterator[Finding]:
    """Validate the rule's results for every in_batched combination and compare vmap with the per-example loop."""
    _, rule = _compat.custom_vmap_parts(ctx.subject.obj)
    if rule is None:
        yield _no_rule(ctx)
        return
    if not (_locate.is_user_code(rule) or ctx.options.include_jax):  # e.g. jax.custom_batching.sequential_vmap
        owner = getattr(_locate.unwrap(rule), "__qualname__", "a JAX helper")
        raise SkipCheck(f"the vmap rule of {ctx.subject.name} is JAX's own ({owner}); pass --include-jax to check "
                        "it")
    if not ctx.specs:
        raise SkipCheck(f"{ctx.subject.name} takes no array arguments: there is nothing to vmap over")
    t = _target(ctx, rule)
    out_shapes = [tuple(leaf.shape) for leaf in t.expected_leaves]
    batch = ctx.batch_size(out_shapes)
    outer = ctx.batch_size(out_shapes + [(batch,)])
    user_axes = ctx.options.in_axes if ctx.subject.parent is None else None  # --in-axes is about the target
    findings = []
    for variant in loop_variants(len(ctx.specs), batch, outer, user_axes):
        findings += run_variant(ctx, t, variant)
    if not ctx.subject.inside_custom_derivative:  # else JAX never calls it under vmap of its own jvp
        findings += all_unbatched(ctx, t, batch)
    yield from _first_per_code(findings)


@check("custom-vmap-grad", family="grad", kinds={"custom_vmap"})
def custom_vmap_grad(ctx: Context) -> Iterator[Finding]:
    """`jaxdiag grad` on a custom_vmap: explain the known limitation instead of JAX's linearization error."""
    yield from grad_outside_vmap(ctx)


def _first_per_code(findings: list[Finding]) -> list[Finding]:
    """The same defect shows under many variants: keep the first finding of each code."""
    seen: set[str] = set()
    kept = []
    for f in findings:
        if f.code not in seen:
            seen.add(f.code)
            kept.append(f)
    return kept


CHECKS = [custom_vmap_rule, custom_vmap_grad]
