"""Check: `jax.vjp(jax.vmap(f))` against the stacked per-example VJPs, in the batching command.

Forward checks cannot see what a batching rule does to the shapes the transpose rule later receives: an unbatched
operand given a size-1 batch dim (`x[None]`, `x.reshape(1, *x.shape)`) or a broadcast one computes the right forward
values by broadcasting, and then the transpose rule returns a full-batch cotangent for a size-1 operand (JAX: "Expected
cotangent type float32[1,2] but got float32[3,2]"), or a transpose rule that reads a shape off its operands (the
batch axis where a data axis was) gives silently wrong cotangents. So reverse mode is run through vmap with every
argument batched, each argument unbatched in turn (its expected cotangent is the sum over the examples) and batch
size 1, each example with its own cotangent, against `jax.vjp` of each example. The transpose rule is spied on to
name the operand and cotangent shapes at fault (JXB017 wrong values, JXB018 a failure); a transpose rule that raises
itself is located at its failing line, and an operand the batching rule rightly kept unbatched and linear there is
named (its cotangent must be summed over the batch: a rule mapping its per-example self over the batch with out_axes
None for it raises).

Under `jaxdiag check` the all-batched variants (batch size 1 too) are left to `grad-composition` (JXG016), which
sees the same defects there: only the unbatched-argument variants, which it never runs, are run here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ... import _compat
from ..._core import _locate
from ... import _rules as rules
from ..._loading._numerics import compare
from ..._core._report import Finding, Location
from .._base import Context, SkipCheck, check
from .._gradref import grad_tol, short_message, to_f64
from .._shared import user_frame_location
from ..._harness import call_user, jaxdiag_code
from .._vmap_harness import axes_repr


@dataclass
class _Shapes:
    """One call of the transpose rule under the batched VJP: its operands' shapes and what it returned."""

    operands: list[tuple[tuple[int, ...], bool]]  # (shape, linear: an UndefinedPrimal) per operand
    returned: list[tuple[int, ...] | None]  # cotangent shape per operand (None: no cotangent)
    raised: bool = False  # the rule itself raised (recorded before the call, so a failing call is seen too)


def _shape(x: Any) -> tuple[int, ...]:
    aval = getattr(x, "aval", None)
    return tuple(getattr(aval, "shape", np.shape(x)) if aval is not None else np.shape(x))


def _spy(calls: list[_Shapes]) -> Callable[[Callable], Callable]:
    def wrap(original: Callable) -> Callable:
        def spy(ct: Any, *args: Any, **params: Any) -> Any:
            with jaxdiag_code("the batched-VJP transpose spy"):
                call = _Shapes([(_shape(a), _compat.is_undefined_primal(a)) for a in args], [], raised=True)
                calls.append(call)
            out = original(ct, *args, **params)
            with jaxdiag_code("the batched-VJP transpose spy"):
                items = out if isinstance(out, (list, tuple)) else [out]
                call.raised = False
                call.returned = [None if (o is None or _compat.is_symbolic_zero(o)) else _shape(o) for o in items]
            return out

        return spy

    return wrap


def _cotangent(w: np.ndarray, j: int) -> np.ndarray:
    """Example j's output cotangent: `w` rolled by j and scaled by 1 + j (every example's differs)."""
    return ((1 + j) * np.roll(w.reshape(-1), j)).reshape(w.shape).astype(w.dtype)


class _Run:
    """The subject's flat float outputs as a function of its differentiable arguments, per example and batched."""

    def __init__(self, ctx: Context, diff: list[int]):
        self.ctx, self.diff = ctx, diff

    def outputs(self, fn: Callable, args: Sequence[Any]) -> Callable:
        def f(*diffs: Any) -> list[Any]:
            full = list(args)
            for i, x in zip(self.diff, diffs):
                full[i] = x
            return jax.tree_util.tree_leaves(fn(*full))

        return f

    def one(self, args: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
        f = self.outputs(self.ctx.subject.call, args)
        _, pullback = jax.vjp(f, *[args[i] for i in self.diff])
        return [np.asarray(g) for g in pullback(list(cts))]

    def batched(self, axes: tuple[int | None, ...], args: Sequence[Any], cts: Sequence[Any]) -> list[Any]:
        f = self.outputs(jax.vmap(self.ctx.subject.call, in_axes=axes), args)
        _, pullback = jax.vjp(f, *[args[i] for i in self.diff])
        return [np.asarray(g) for g in pullback(list(cts))]


def _variants(ctx: Context, size: int) -> list[tuple[tuple[int | None, ...], int]]:
    n = len(ctx.specs)
    fixed = set(ctx.subject.never_batched)
    base = tuple(None if i in fixed else 0 for i in range(n))
    alone = ctx.options.command != "check"  # under `check`, grad-composition runs the all-batched vjp(vmap f)
    out: list[tuple[tuple[int | None, ...], int]] = [(base, size)] if alone else []
    for i in range(n):
        axes = tuple(None if k == i else a for k, a in enumerate(base))
        if axes != base and any(a is not None for a in axes):
            out.append((axes, size))
    if alone:
        out.append((base, 1))
    return [v for v in dict.fromkeys(out) if any(a is not None for a in v[0])]


@check("batching-vjp", family="batching", kinds={"primitive", "function"})
def batched_vjp_check(ctx: Context) -> Iterator[Finding]:
    specs = ctx.specs
    if ctx.subject.kind == "function" and any(s.kind == "primitive" for s in ctx.cache.nested_subjects):
        raise SkipCheck("the user primitives inside are checked on their own (their transpose rules are where a "
                        "batched VJP goes wrong)")
    diff = [i for i, s in enumerate(specs) if s.is_inexact and i not in ctx.subject.unperturbed]
    if not diff:
        raise SkipCheck("no floating-point argument to differentiate")
    example = [_compat.device_array(x) for x in ctx.example()]
    out = call_user(lambda: jax.tree_util.tree_leaves(ctx.subject.call(*example)), quiet=True)
    if out.error is not None or not out.value or not all(
            jnp.issubdtype(np.asarray(o).dtype, jnp.inexact) for o in out.value):
        raise SkipCheck("the outputs are not all floating-point (or the function fails on its example)")
    run = _Run(ctx, diff)
    ws = [np.asarray(ctx.rng.standard_normal(np.shape(o))).astype(np.asarray(o).dtype) for o in out.value]
    per = call_user(run.one, example, ws, quiet=True)
    if per.error is not None:
        raise SkipCheck(f"jax.vjp of one example fails ({short_message(per.error, 120)}): the grad checks own that")
    size = ctx.batch_size([np.shape(o) for o in out.value])
    pool = ctx.draw_examples(size)
    for axes, n in _variants(ctx, size):
        finding = _one_variant(ctx, run, axes, n, pool, ws)
        if finding is not None:
            yield finding
            return


def _one_variant(ctx: Context, run: _Run, axes: tuple[int | None, ...], size: int, pool: list[np.ndarray],
                 ws: list[np.ndarray]) -> Finding | None:
    rows = [[_compat.device_array(column[0] if axes[i] is None else column[j]) for i, column in enumerate(pool)]
            for j in range(size)]
    cts = [[_cotangent(w, j) for w in ws] for j in range(size)]
    expected: list[np.ndarray] = []
    per_example, outputs = [], []
    for j in range(size):
        got = call_user(run.one, rows[j], cts[j], quiet=True)
        out = call_user(lambda: jax.tree_util.tree_leaves(ctx.subject.call(*rows[j])), quiet=True)  # noqa: B023
        if got.error is not None or out.error is not None:
            return None  # one example's VJP fails: not a batching defect
        per_example.append(got.value)
        outputs.append(out.value)
    for k, i in enumerate(run.diff):
        stacked = np.stack([to_f64(p[k]) for p in per_example])
        expected.append(stacked.sum(0) if axes[i] is None else stacked)
    batch = [_compat.device_array(column[0] if a is None else column[:size]) for column, a in zip(pool, axes)]
    batched_cts = [_compat.device_array(np.stack([c[k] for c in cts])) for k in range(len(ws))]
    forward = call_user(lambda: jax.block_until_ready(jax.vmap(ctx.subject.call, in_axes=axes)(*batch)), quiet=True)
    if forward.error is not None:
        return None  # vmap itself fails: batching-vs-loop reports it
    for k, leaf in enumerate(jax.tree_util.tree_leaves(forward.value)):
        if not compare(to_f64(leaf), np.stack([to_f64(o[k]) for o in outputs])).ok:
            return None  # vmap itself differs from the loop: batching-vs-loop reports it
    shapes: list[_Shapes] = []
    spying = (_compat.spy_transpose_rule(ctx.subject.obj, _spy(shapes)) if ctx.subject.kind == "primitive"
              else _NoSpy())
    with spying:
        got = call_user(run.batched, axes, batch, batched_cts, quiet=True)
    how = f"`jax.vjp(jax.vmap({ctx.subject.name}, in_axes={axes_repr(axes)}))` with batch size {size}"
    if got.error is not None:
        cause, fix = _cause(ctx, shapes, axes)
        inside = _raised_inside(ctx, shapes, got.error)
        return rules.BATCHED_VJP_FAILS.finding(
            evidence=f"{how} raises {type(got.error).__name__}: {short_message(got.error, 200)}.{cause}",
            fix=fix, location=inside or _location(ctx, bool(cause)))
    for k, i in enumerate(run.diff):
        tol = grad_tol(ctx.specs[i].dtype)
        cmp = compare(to_f64(got.value[k]), expected[k], tol=tol)
        if not cmp.ok and not cmp.nonfinite:
            what = "the sum over the examples of" if axes[i] is None else "the stacked"
            cause, fix = _cause(ctx, shapes, axes)
            return rules.BATCHED_VJP_MISMATCH.finding(
                evidence=f"{how}, a different output cotangent per example, gives a cotangent for argument {i} "
                         f"that differs from {what} per-example cotangents: {cmp.describe()}.{cause}",
                fix=fix, location=_location(ctx, True))
    return None


class _NoSpy:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _cause(ctx: Context, shapes: list[_Shapes], axes: tuple[int | None, ...]) -> tuple[str, str]:
    """What the transpose rule was handed and returned, when that explains it, and the fix."""
    name = _transpose_name(ctx)
    unbatched = [i for i, a in enumerate(axes) if a is None]
    for call in shapes:
        for (shape, linear), ret in zip(call.operands, call.returned):
            if linear and ret is not None and tuple(ret) != tuple(shape):
                size_one = bool(shape) and shape[0] == 1
                text = (f" {name} returned a cotangent of shape {ret} for a linear operand of shape {shape}"
                        + (": the batching rule gave an unbatched operand a size-1 batch dim, and the transpose "
                           "rule does not sum its cotangent back to that shape" if size_one else "") + ".")
                generic = (_compat.generic_batcher_name(ctx.subject.obj) if ctx.subject.kind == "primitive"
                           else None)
                unbroadcast = (f"make {name} return each cotangent in its operand's shape: sum over the axes where "
                               "the operand has size 1 and the cotangent does not")
                fix = (f"`batching.{generic}` gives an unbatched operand size-1 axes: {unbroadcast}." if generic else
                       "Either keep the operand unbatched in the batching rule (bind with its batch dim moved or "
                       f"broadcast to the full batch size, `jnp.broadcast_to(x, (size, *x.shape))`), or {unbroadcast}.")
                return text, fix
    kept = _unbatched_linear(ctx, shapes, axes)
    if kept:
        listed = ", ".join(f"{k} (shape {shape})" for k, shape in kept)
        return (f" {name} itself raised it, transposing the batched bind with operand {listed} left unbatched by "
                "the vmap and linear: its cotangent is the sum over the batch of the per-example cotangents, in "
                "the operand's own shape.",
                f"Make {name} sum the cotangent of an operand the vmap left unbatched over the batch axis and "
                "return it in that operand's own shape: the per-example cotangents differ, so it cannot be declared "
                "unbatched (as out_axes None does for a vmap over the per-example rule).")
    sized = [shape for call in shapes for shape, linear in call.operands if not linear and shape and shape[0] == 1]
    if sized and unbatched:
        return (f" {name} received operands with a size-1 leading axis {sized[0]} (a size-1 batch dim the batching "
                "rule gave an unbatched operand) and computes a wrong cotangent from it.",
                f"Make {name} correct for operands that carry a size-1 or broadcast batch axis in front (read sizes "
                "from the axes the params name or from negative axes, never from axis 0), or keep unbatched "
                "operands unbatched in the batching rule.")
    return ("", f"Make the transpose rule of {ctx.subject.name} correct on the batched shapes its batching rule binds "
                "(an extra leading batch axis, of the full size or of size 1 for an unbatched operand): use negative "
                "axes or the axes the params name, and return each cotangent in its operand's shape.")


def _unbatched_linear(ctx: Context, shapes: list[_Shapes], axes: tuple[int | None, ...]
                      ) -> list[tuple[int, tuple[int, ...]]]:
    """The operands of a transpose call that raised which are linear, unbatched in `axes` and in their own
    per-example shape: the batching rule kept them unbatched (no size-1 or broadcast batch dim to blame), so the
    transpose rule fails on the one cotangent every unbatched operand needs, the sum over the batch."""
    raised = [call for call in shapes if call.raised]
    if not raised or len(raised[-1].operands) != len(axes):
        return []
    return [(k, shape) for k, (shape, linear) in enumerate(raised[-1].operands)
            if linear and axes[k] is None and tuple(shape) == tuple(ctx.specs[k].shape)]


def _raised_inside(ctx: Context, shapes: list[_Shapes], error: BaseException) -> Location | None:
    """The line of the user's transpose rule that raised, when the spied rule itself raised."""
    if ctx.subject.kind != "primitive" or not any(call.raised for call in shapes):
        return None
    rule = _compat.transpose_rule(ctx.subject.obj)
    users = [f for f in _compat.rule_user_functions(rule) if f is not None and _locate.is_user_code(f)] \
        if rule is not None else []
    return user_frame_location(error, users[0]) if users else None


def _transpose_name(ctx: Context) -> str:
    if ctx.subject.kind != "primitive":
        return f"the transpose rule inside {ctx.subject.name}"
    rule = _compat.transpose_rule(ctx.subject.obj)
    users = [f for f in _compat.rule_user_functions(rule) if f is not None and _locate.is_user_code(f)] \
        if rule is not None else []
    name = getattr(_locate.unwrap(users[0]), "__name__", "") if users else ""
    return name if name and name != "<lambda>" else f"{ctx.subject.obj.name}'s transpose rule"


def _location(ctx: Context, transpose: bool) -> Location | None:
    """The user's transpose rule (where the shapes go wrong), else the batching rule, else the subject."""
    if ctx.subject.kind != "primitive":
        return ctx.subject.location
    rule = _compat.transpose_rule(ctx.subject.obj)
    users = [f for f in _compat.rule_user_functions(rule) if f is not None and _locate.is_user_code(f)] \
        if rule is not None else []
    if users and transpose:
        return _locate.locate(users[0])
    batching = _compat.batching_rule(ctx.subject.obj)
    if batching is not None and _locate.is_user_code(batching):
        return _locate.locate(batching)
    return _locate.locate(users[0]) if users else ctx.subject.location
