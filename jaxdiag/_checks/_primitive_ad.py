"""Primitive reverse mode: transpose rule present for linear primitives (JXR007), its output structure (JXG003),
cotangent dtypes (JXG004), which argument it assumes linear (JXG005), symbolic zero cotangents (JXG006), and the
dot-product test against the JVP rule (JXG002).

Reverse mode is run the way users run it (jax.vjp with respect to one argument at a time, and, for a
multiple-results primitive, through one output at a time so the others' cotangents are symbolic zeros), with a
spy on the transpose rule that validates what it returns before JAX sees it. JVP-rule checks are shared with
custom_jvp in `_custom_jvp/`.
"""

from __future__ import annotations

import linecache
import os
import re
from typing import Any, Callable, Generator, Iterator, Sequence

import jax
import numpy as np

from .. import _compat
from .._core import _locate
from .. import _rules as rules
from .._core._report import Finding, Location
from ._base import Context, SkipCheck, check
from .._harness import call_user, jaxdiag_code
from ._shared import raises_on_purpose, user_frame_location
from ._custom_jvp import T, names
from ._gradref import (
    JVP_BLOCKERS, REVERSE_ONLY, Arg, GradState, absdot, aval_text, close_scalar, dot, error_text, grad_tol, is_float0,
    quiet_call, require, return_values, short_dtype, source_of, state, vjp_against_fd,
)


def _transpose_fns(st: GradState, prim: Any = None) -> list[Any]:
    """The user's functions behind the transpose rule of the subject's primitive (or of `prim`)."""
    rule = _compat.transpose_rule(st.subject.obj if prim is None else prim)
    return [f for f in _compat.rule_user_functions(rule) if f is not None] if rule is not None else []


def _location(st: GradState, prim: Any = None) -> Location | None:
    fns = _transpose_fns(st, prim)
    for fn in fns:
        if _locate.is_user_code(fn):
            return _locate.locate(fn)
    return _locate.locate(fns[0]) if fns else st.subject.location


def _transpose_name(st: GradState) -> str:
    fns = _transpose_fns(st)
    name = getattr(_locate.unwrap(fns[0]), "__name__", "") if len(fns) == 1 else ""
    return name if name and name != "<lambda>" else f"{st.subject.obj.name}'s transpose rule"


class Spy:
    """Records every call JAX makes to the transpose rule: arguments, result or exception."""

    def __init__(self) -> None:
        self.calls: list[dict] = []

    def wrap(self, original: Callable) -> Callable:
        def spy(ct: Any, *args: Any, **params: Any) -> Any:
            with jaxdiag_code("the transpose-rule spy"):  # its failure is jaxdiag's, never the rule's
                call: dict = {"ct": ct, "args": args}
                self.calls.append(call)
            ran = call_user(original, ct, *args, **params)
            with jaxdiag_code("the transpose-rule spy"):
                call["exc" if ran.error is not None else "out"] = ran.error if ran.error is not None else ran.value
            if ran.error is not None:
                raise ran.error  # JAX sees what the user's rule raised, unchanged
            return ran.value

        return spy


def _run_reverse(st: GradState, args: Sequence[Arg], k: int | None, spy: Spy) -> tuple[Any, BaseException | None]:
    """Cotangents of `args` by jax.vjp through output k (all outputs when None), the transpose rule spied on."""
    ws = st.cotangents(0)

    def fn(*xs: Any) -> Any:
        out = st.call_target(st.values({a.pos: x for a, x in zip(args, xs)}))
        return out if k is None else jax.tree_util.tree_leaves(out)[k]

    def run() -> Any:
        _, pullback = jax.vjp(fn, *[a.value for a in args])
        ct = jax.tree_util.tree_unflatten(st.out_treedef, list(ws)) if k is None else ws[k]
        return list(pullback(ct))

    with _compat.spy_transpose_rule(st.subject.obj, spy.wrap):
        return quiet_call(run)


@check("primitive-transpose", family="grad", kinds={"primitive"}, reads=(*JVP_BLOCKERS, "grad.reported_errors"),
       provides=("grad.eager_grad", "grad.blocked.primitive-transpose"))
def primitive_transpose(ctx: Context) -> Iterator[Finding]:
    st = state(ctx)
    require(st)
    if not st.diff:
        raise SkipCheck("no floating-point argument to differentiate")
    outputs = [k for k in range(len(st.out_leaves)) if st.out_diff(k)]
    if not outputs:
        raise SkipCheck("no floating-point output")
    reported: set[rules.Rule] = set()
    yield from _check_arguments(st, ctx, reported)
    for rule in reported:  # later checks (composition, second order) would only repeat these
        st.blocked.setdefault(rule, "the transpose rule is defective")


def _check_arguments(st: GradState, ctx: Context, reported: set[rules.Rule]) -> Iterator[Finding]:
    """Reverse mode with respect to every argument at once (full cotangent, then one output at a time for a
    multiple-results primitive), and one argument at a time where the joint run leaves configurations of the
    transpose rule untested."""
    outputs = [k for k in range(len(st.out_leaves)) if st.out_diff(k)]
    spy = Spy()
    joint: list[Finding] = []
    ct = yield from _collecting(_reverse(st, ctx, st.diff, None, spy, reported), joint)
    raised = [f for f in joint if f.code in (rules.TRANSPOSE_ASSUMES_LINEAR_ARG.code,
                                             rules.DERIVATIVE_RULE_RAISED.code)]
    if raised and len(st.diff) > 1:  # say which directions fail, not just the first one JAX happened to try
        raised[0].message += _directions(st)
    if ct is not None:
        st.memo.eager_grad = ct  # the eager gradient, reused by the composition check
        if spy.calls and not reported & {rules.TRANSPOSE_OUTPUT_STRUCTURE, rules.COTANGENT_DTYPE}:
            yield from _dot_test(st, ct, reported)
    jointly_linear = any(sum(_compat.is_undefined_primal(a) for a in c["args"]) > 1 for c in spy.calls)
    if len(st.diff) > 1 and (jointly_linear or not spy.calls):
        for arg in st.diff:  # e.g. grad(f, argnums=1): the other arguments are then concrete constants
            yield from _reverse(st, ctx, [arg], None, Spy(), reported)
    if st.subject.obj.multiple_results and len(outputs) > 1:
        for k in outputs:  # the caller uses one output: the others' cotangents are symbolic zeros
            yield from _reverse(st, ctx, st.diff, k, Spy(), reported)


def _collecting(gen: Generator[Finding, None, Any], into: list[Finding]) -> Generator[Finding, None, Any]:
    """Re-yield `gen`'s findings, keeping them in `into`; returns what `gen` returns."""
    while True:
        try:
            item = next(gen)
        except StopIteration as stop:
            return stop.value
        into.append(item)
        yield item


def _directions(st: GradState) -> str:
    """` jax.grad with respect to x fails; with respect to y works.`: each differentiable argument alone."""
    failing: list[str] = []
    working: list[str] = []
    for arg in st.diff:
        _, exc = _run_reverse(st, [arg], None, Spy())
        (failing if exc is not None else working).append(arg.name)
    if not failing:
        return ""
    text = f" One argument at a time: jax.grad with respect to {', '.join(failing)} fails"
    return text + (f"; with respect to {', '.join(working)} it works." if working else ".")


def _reverse(st: GradState, ctx: Context, args: Sequence[Arg], k: int | None, spy: Spy,
             reported: set[rules.Rule]) -> Generator[Finding, None, Any]:
    """One reverse-mode run; yields its findings and returns the cotangents (None when it failed)."""
    ct, exc = _run_reverse(st, args, k, spy)
    spied = list(_spy_findings(st, spy, k))
    for finding in spied:
        if rules.rule(finding.code) not in reported:
            reported.add(rules.rule(finding.code))
            yield finding
    if exc is None:
        return ct
    # JAX's own error after a spied defect, or one a JVP-rule finding already explained, is not new
    if not spied and not _already_reported(st, exc):
        failed = _reverse_failed(st, ctx, args, exc)
        if failed is not None and rules.rule(failed.code) not in reported:
            reported.add(rules.rule(failed.code))
            yield failed
    return None


def _already_reported(st: GradState, exc: BaseException) -> bool:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return first in st.memo.reported_errors


def _reverse_failed(st: GradState, ctx: Context, args: Sequence[Arg], exc: BaseException) -> Finding | None:
    prim = st.subject.obj.name
    text = str(exc)
    if isinstance(exc, NotImplementedError) and "Transpose rule" in text and f"'{prim}'" in text:
        st.blocked[rules.MISSING_TRANSPOSE_RULE] = "no transpose rule"
        # `grad` was asked for reverse mode (an error); `check` cannot know whether anyone uses it (a warning)
        missing = rules.MISSING_TRANSPOSE_RULE if ctx.options.command == "check" else rules.GRAD_WITHOUT_TRANSPOSE_RULE
        return missing.finding(
            prim=prim,
            args_names=_names_of(args),
            var=_var(st),
            args=', '.join(a.name for a in st.args),
            location=st.subject.location)
    if rules.JVP_NOT_LINEAR in st.blocked:
        return None
    _, rule = names(st)
    return rules.DERIVATIVE_RULE_RAISED.finding(
        evidence=f"jax.grad of {prim} with respect to {_names_of(args)} fails: {error_text(exc)}. jax.grad "
                 f"transposes the "
        f"tangent computation of {rule}; every operation applied to a tangent must have a transpose.",
        fix=f"Express {rule}'s tangent output with linear operations on the tangents (or give {prim} a transpose "
            "rule if the JVP re-binds it).",
        location=st.subject.location)


def _names_of(args: Sequence[Arg]) -> str:
    return ", ".join(a.name for a in args)


def _var(st: GradState) -> str:
    loc = st.subject.location
    return loc.function if loc is not None and loc.function.isidentifier() else f"{st.subject.obj.name}_p"


def _spy_findings(st: GradState, spy: Spy, k: int | None) -> Iterator[Finding]:
    name = _transpose_name(st)
    for call in spy.calls:
        args = call["args"]
        undefined = [i for i, a in enumerate(args) if _compat.is_undefined_primal(a)]
        if "exc" in call:
            yield _raised(st, name, call, undefined, k)
            return
        yield from _validate(st, name, call["out"], args, undefined)


def _raised(st: GradState, name: str, call: dict, undefined: list[int], k: int | None) -> Finding:
    exc, ct = call["exc"], call["ct"]
    text = error_text(exc, _transpose_fns(st)[0] if _transpose_fns(st) else None)
    which = ", ".join(st.args[i].name for i in undefined if i < len(st.args))
    asserted = _asserted_linear(st, exc)
    if asserted is not None:
        location, line_text, assumed = asserted
        known = [a.name for i, a in enumerate(st.args) if i not in undefined]
        return rules.TRANSPOSE_ASSUMES_LINEAR_ARG.finding(
            name=name, text="AssertionError", which=which,
            cause=f"it asserts `{line_text}`, so jax.grad with respect to {which} (with {assumed} a known primal, "
                  "a concrete value rather than an ad.UndefinedPrimal) fails.",
            remedy=f"handle the case where {assumed} is a known primal: branch with `if "
                   f"ad.is_undefined_primal({which.split(', ')[0]}):` and return the cotangent for the undefined "
                   f"argument ({which}), None for the known one(s) ({', '.join(known) or assumed}), instead of "
                   "asserting.",
            location=location)
    if "UndefinedPrimal" in str(exc):
        return rules.TRANSPOSE_ASSUMES_LINEAR_ARG.finding(
            name=name,
            text=text,
            which=which,
            cause="it uses an ad.UndefinedPrimal as a value, i.e. it assumes another argument is the linear one.",
            remedy="branch on `ad.is_undefined_primal(x)` for each argument and return the cotangent only for the "
                   "undefined one(s) (None for the others).",
            location=_location(st))
    zero_ct = _compat.is_symbolic_zero(ct) or (isinstance(ct, (list, tuple)) and any(
        _compat.is_symbolic_zero(c) for c in ct))
    if zero_ct:
        out = st.out_names[k] if k is not None else "an output"
        return rules.SYMBOLIC_ZERO_UNHANDLED.finding(
            evidence=f"{name} raised {text} when the cotangent of some output is a symbolic ad.Zero (the caller used "
                     f"only "
            f"{out}).",
            fix=f"In {name}, test `type(ct) is ad.Zero` (or use `ad.instantiate_zeros(ct)`).",
            location=_location(st))
    # a `raise SomeError(...)` of the rule's own body (equinox's "cannot be reverse-mode autodifferentiated") is a
    # refusal, graded as the JVP and fwd/bwd refusals are
    refuses = any(raises_on_purpose(exc, fn) for fn in _transpose_fns(st))
    return (rules.DERIVATIVE_RULE_REFUSES if refuses else rules.DERIVATIVE_RULE_RAISED).finding(
        evidence=f"{name} raised {text} when transposing with respect to {which}.",
        fix=f"Make {name}(ct, *args, **params) return one cotangent per argument.",
        location=_location(st))


_ASSERT_LINEAR = re.compile(r"^\s*assert\s+(?:ad\.)?is_undefined_primal\(\s*(\w+)\s*\)")


def _asserted_linear(st: GradState, exc: BaseException) -> tuple[Location, str, str] | None:
    """(the assert's location, its text, the argument it assumes linear) when the rule failed on
    `assert ad.is_undefined_primal(y)`."""
    if not isinstance(exc, AssertionError):
        return None
    for fn in _transpose_fns(st):
        if not _locate.is_user_code(fn):
            continue
        where = user_frame_location(exc, fn)
        if where is None:
            continue
        text = linecache.getline(os.path.abspath(where.path), where.line)
        match = _ASSERT_LINEAR.match(text)
        if match:
            return where, text.split("#")[0].strip(), match.group(1)
    return None


def _validate(st: GradState, name: str, out: Any, args: tuple, undefined: list[int]) -> Iterator[Finding]:
    if not isinstance(out, (tuple, list)):
        yield rules.TRANSPOSE_OUTPUT_STRUCTURE.finding(
            evidence=f"{name} returned a bare {aval_text(out)} for {st.subject.obj.name} with {len(args)} "
                     f"argument(s): it must "
            f"return a list with one cotangent per argument (None for non-linear ones). JAX fails with a safe_zip "
            "length error.",
            fix=f"Return a list, ordered like the primitive's arguments: `{_list_return(st, undefined, len(args))}`.",
            location=_location(st))
        return
    if len(out) != len(args):
        yield rules.TRANSPOSE_OUTPUT_STRUCTURE.finding(
            evidence=f"{name} returned {len(out)} cotangent(s) ({aval_text(out)}) for {len(args)} argument(s) of "
            f"{st.subject.obj.name}.",
            fix="Return exactly one entry per argument, None for the non-linear ones.",
            location=_location(st))
        return
    for i in undefined:
        entry, aval = out[i], args[i].aval
        if entry is None or _compat.is_symbolic_zero(entry):
            continue
        shape = tuple(np.shape(entry))
        if shape != tuple(aval.shape):
            yield rules.TRANSPOSE_OUTPUT_STRUCTURE.finding(
                evidence=f"{name}'s cotangent for {st.args[i].name} has shape {aval_text(entry)} but the argument is "
                f"{short_dtype(aval.dtype)}{list(aval.shape)}; JAX fails with `Expected cotangent type ... but got "
                "...`, naming no rule.".replace(" ", " "),
                fix=f"Return a cotangent shaped like {st.args[i].name} (sum over broadcast axes, reshape).",
                location=_location(st))
            continue
        # a traced cotangent (a rule calling a jitted function under `jax.jit`) has a dtype but no value to read
        dtype = np.dtype(entry.dtype if hasattr(entry, "dtype") else np.asarray(entry).dtype)
        if dtype != np.dtype(aval.dtype):
            yield rules.COTANGENT_DTYPE.finding(
                owner=name, argument=st.args[i].name, got=short_dtype(dtype), want=short_dtype(aval.dtype),
                truncated=" (fractions truncated)" if dtype.kind in "iub" else "",
                cast=f"ct.astype({st.args[i].name}.aval.dtype)", location=_location(st))


def _list_return(st: GradState, undefined: list[int], n: int) -> str:
    """`return [2.0 * ct]` from the rule's own `return 2.0 * ct`, with None for the non-linear arguments."""
    fns = _transpose_fns(st)
    values = return_values(fns[0]) if fns else []
    expr = source_of(values[0]) if len(values) == 1 else "ct_x"
    entries = ["None"] * n
    entries[undefined[0] if undefined else 0] = expr
    return f"return [{', '.join(entries)}]"


def _dot_test(st: GradState, ct: list[Any], reported: set[rules.Rule]) -> Iterator[Finding]:
    """<w, J v> from the JVP rule against <J^T w, v> from the transpose rule, v a step in every argument; on a
    mismatch, argument by argument to say which one."""
    if _dot_mismatch(st, st.diff, ct) is None:
        return
    culprit: tuple[Arg, tuple[float, float, float]] | None = None
    if len(st.diff) > 1:
        for arg in st.diff:
            numbers = _dot_mismatch(st, [arg], [ct[st.diff.index(arg)]])
            if numbers is not None:
                culprit = (arg, numbers)
                break
    args = [culprit[0]] if culprit else st.diff
    fwd, rev, tol = culprit[1] if culprit else _dot_mismatch(st, st.diff, ct)  # type: ignore[misc]
    name = _transpose_name(st)
    _, rule = names(st)
    reported.add(rules.TRANSPOSE_NOT_ADJOINT)
    yield rules.TRANSPOSE_NOT_ADJOINT.finding(
        name=name,
        rule=rule,
        args_names=_names_of(args),
        fwd=fwd,
        rev=rev,
        tol=tol,
        location=_location(st))


def _dot_mismatch(st: GradState, args: Sequence[Arg], cts: Sequence[Any]) -> tuple[float, float, float] | None:
    """(forward, reverse, tolerance) when the dot-product test fails for a step in `args`, else None."""
    ws = st.cotangents(0)
    key = ("j", 0) if len(args) == len(st.diff) else ("a", args[0].pos, 0)
    t = T(st, key, {a.pos: st.tangent(a, 0) for a in args})
    if t is None:
        return None
    live = [(w, x) for w, x in zip(ws, t) if not is_float0(w)]
    fwd = sum(dot(w, x) for w, x in live)
    rev = sum(dot(c, st.direction(a, 0)) for a, c in zip(args, cts))
    scale = max(sum(absdot(w, x) for w, x in live), sum(absdot(c, st.direction(a, 0)) for a, c in zip(args, cts)))
    tol = max(grad_tol(a.dtype) for a in args)
    return None if close_scalar(rev, fwd, scale, tol) else (fwd, rev, tol)


# needs: a fresh-draw retry of this check alone runs jvp-rule-output first, which finds the tangent it checks
@check("reverse-only-reference", family="grad", kinds={"primitive"}, needs=("grad.reverse_only",),
       reads=JVP_BLOCKERS)
def reverse_only_reference(ctx: Context) -> Iterator[Finding]:
    """A JVP rule whose tangent JAX can only transpose (JXN019): no check can run it, so reverse mode is checked
    directly, `jax.vjp` of the primitive against finite differences of its impl (JXG001 at the transpose rule)."""
    st = state(ctx)
    if st.memo.reverse_only is None:
        raise SkipCheck("its JVP rule runs: the JVP and transpose checks cover reverse mode")
    others = [why for blocker, why in st.blocked.items() if blocker != REVERSE_ONLY]
    if others:
        raise SkipCheck(f"blocked: {others[0]}")
    tangent = st.memo.reverse_only
    location = _location(st, tangent)
    where = f"the transpose rule of {getattr(tangent, 'name', tangent)}"
    ws = st.cotangents(0)
    ct, exc = _run_reverse(st, st.diff, None, Spy())
    prim = st.subject.obj.name
    if exc is not None:
        yield rules.DERIVATIVE_RULE_RAISED.finding(
            evidence=f"jax.grad of {prim} fails in {where}, its only derivative: {error_text(exc)}",
            fix=f"Make {where} return one cotangent per linear argument, of its shape and dtype.", location=location)
        return
    checks = vjp_against_fd(st, ws, {a.pos: c for a, c in zip(st.diff, ct)})
    if not checks:  # reverse mode is this primitive's only derivative: with no reference, nothing is verified
        raise SkipCheck("finite differences of the impl are not finite along any direction here")
    bad = [c for c in checks if not c.ok and st.fd.stable(c.arg, c.d)]
    if not bad:
        return
    worst = max(bad, key=lambda c: abs(c.got - c.expected) / max(c.scale, 1e-300))
    name = worst.arg.name if worst.arg is not None else ", ".join(a.name for a in st.diff)
    yield rules.JVP_MISMATCH.finding(
        rule=f"jax.grad of {prim} ({where}, which defines it: its JVP is reverse-mode only)", fun=prim,
        details=f"for a step in {name} and a random output cotangent w, <grad(w), v> = {worst.got:.6g} by jax.vjp but "
                f"<w, J v> = {worst.expected:.6g} from {st.fd.describe(worst.arg, worst.d)} (tolerance "
                f"{worst.tol:.0e})",
        modes="jax.grad and jax.vjp", name=name, location=location)


CHECKS = [primitive_transpose, reverse_only_reference]
