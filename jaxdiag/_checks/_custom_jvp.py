"""JVP-rule checks shared by custom_jvp rules and primitive JVP rules.

The rule is called directly, as JAX calls it (`rule(*nondiff, primals, tangents)` for custom_jvp,
`rule(primals, tangents, **params)` for a primitive), with seeded tangents:
- the output is a pair, tangents match the primal's structure, shape and tangent dtype (JXG007), the primal
  equals the function's output (JXG021), the rule does not raise (JXG017; JXG022 on float0, JXG015 when written
  for another argument order); a primitive without a rule is JXR006;
- the tangent map is linear: additive, homogeneous, zero to zero (JXG020, with why grad fails or is wrong);
- tangents agree with float64 finite differences and autodiff of the undecorated primal (custom_jvp: JXG014,
  a warning; primitive: JXG001, an error);
- symbolic zero tangents are handled when JAX passes them (JXG006);
- reverse mode works and agrees with forward mode (custom_jvp; primitives in `_primitive_ad.py`).
"""

from __future__ import annotations

import collections
from typing import Any, Iterator, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compat
from .. import _locate
from .. import _rules as rules
from .._numerics import compare
from .._report import Finding, Location
from ._base import Context, SkipCheck, check
from ._gradref import (N_DIRECTIONS, Arg, GradState, aval_text, close, dot, error_text, fmt_values, grad_tol,
                       is_float0, is_inexact, leaf_difference, quiet_call, require, rule_name, short_dtype,
                       short_message, state, to_f64)

KINDS = {"custom_jvp", "primitive"}


# ---------------------------------------------------------------------------------------------------------------
# Calling the rule
# ---------------------------------------------------------------------------------------------------------------


def jvp_rule(st: GradState) -> Any:
    return st.jvp_rule if st.kind == "custom_jvp" else _compat.jvp_rule(st.subject.obj)


def user_rules(st: GradState) -> list[Any]:
    """The user's function(s) behind the rule: per-argument rules for `ad.defjvp`."""
    rule = jvp_rule(st)
    return _compat.rule_user_functions(rule) if st.kind == "primitive" else [rule]


def rule_location(st: GradState, arg: Arg | None = None) -> Location | None:
    fns = user_rules(st)
    if arg is not None and st.kind == "primitive" and len(fns) == len(st.args) and fns[arg.pos] is not None:
        return _locate.locate(fns[arg.pos])
    for fn in fns:
        if fn is not None and _locate.is_user_code(fn):
            return _locate.locate(fn)
    for fn in fns:
        if fn is not None:
            return _locate.locate(fn)
    return st.subject.location


def names(st: GradState) -> tuple[str, str]:
    """(function name, rule name) for messages."""
    if st.kind == "primitive":
        prim = st.subject.obj.name
        fns = [f for f in user_rules(st) if f is not None]
        return prim, (rule_name(fns[0], f"{prim}'s JVP rule") if len(fns) == 1 else f"{prim}'s JVP rule")
    fun = rule_name(st.fun, "f")
    return fun, rule_name(st.jvp_rule, f"{fun}_jvp")


def _zero_for(st: GradState, a: Arg, symbolic: bool) -> Any:
    if st.kind == "primitive":
        if symbolic or not a.diff:
            return _compat.ad_zero(a.shape, a.dtype)
        return jnp.zeros(a.shape, a.dtype)
    if a.static:
        return np.zeros_like(np.asarray(a.value))
    if symbolic:
        return _compat.symbolic_zero(a.shape, a.dtype)
    return st.zero_tangent(a)


def call_jvp(st: GradState, tangents: dict[int, Any], symbolic: bool = False) -> tuple[Any, BaseException | None]:
    """The rule on the example primals with `tangents` (by position) and zeros elsewhere (symbolic ones when
    `symbolic`, as JAX passes for arguments it does not differentiate)."""
    rule = jvp_rule(st)
    if st.kind == "primitive":
        primals = st.values()
        tans = [tangents[a.pos] if a.pos in tangents else _zero_for(st, a, symbolic) for a in st.args]
        return quiet_call(rule, primals, tans, **st.subject.params)
    primals = tuple(a.value for a in st.dyn)
    tans = tuple(tangents[a.pos] if a.pos in tangents else _zero_for(st, a, symbolic) for a in st.dyn)
    nondiff = [st.args[i].value for i in st.nondiff]
    return quiet_call(rule, *nondiff, primals, tans)


def _split(st: GradState, result: Any) -> tuple[Any, Any] | None:
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return result[0], result[1]
    return None


def tangent_leaves(st: GradState, tangent_out: Any) -> list[np.ndarray]:
    """The tangent output as dense float64 arrays, one per primal output leaf (symbolic zeros and float0 -> 0)."""
    if st.kind == "primitive" and not st.subject.obj.multiple_results:
        leaves = [tangent_out]
    elif st.kind == "primitive":
        leaves = list(tangent_out)
    else:
        leaves = jax.tree_util.tree_leaves(tangent_out, is_leaf=lambda x: x is None or _compat.is_symbolic_zero(x))
    out = []
    for leaf, primal in zip(leaves, st.out_leaves):
        if leaf is None or _compat.is_symbolic_zero(leaf) or is_float0(leaf):
            out.append(np.zeros(np.shape(primal), np.complex128 if np.asarray(primal).dtype.kind == "c"
                                else np.float64))
        else:
            out.append(to_f64(leaf))
    return out


def T(st: GradState, key: Any, tangents: dict[int, Any]) -> list[np.ndarray] | None:
    """Memoised tangent output for `tangents`; None when the rule raised (reported by jvp-rule-output)."""
    memo = st.memo.setdefault("T", {})
    key = _norm_key(st, key)  # one argument: joint and per-argument tangents are the same call
    if key not in memo:
        result, exc = call_jvp(st, tangents)
        pair = _split(st, result) if exc is None else None
        memo[key] = tangent_leaves(st, pair[1]) if pair is not None else None
    return memo[key]


def _norm_key(st: GradState, key: Any) -> Any:
    if key[0] == "j" and isinstance(key[1], int) and len(st.diff) == 1:
        return ("a", st.diff[0].pos, key[1])
    return key


# Compiled multi-tangent evaluators by rule: repeated checks of a target (test suites, the benchmark) reuse them.
_COMPILED: "collections.OrderedDict[tuple, tuple[Any, Any]]" = collections.OrderedDict()


def T_many(st: GradState, items: Sequence[tuple[Any, dict[int, Any]]]) -> None:
    """Fill T's memo for several tangent sets with one compiled call of the rule (eager calls of a rule cost a
    dispatch per operation); falls back to eager calls when the rule cannot be traced or jitted. A key
    ("z", pos) asks for the tangent of `pos` alone with the others as symbolic zeros (jvp-symbolic-zeros)."""
    memo = st.memo.setdefault("T", {})
    missing = [(_norm_key(st, k), t) for k, t in items if _norm_key(st, k) not in memo]
    if len(missing) > 1 and not any(a.nondiff and not a.static for a in st.args):
        only = tuple(k[1] if k[0] == "z" else None for k, _ in missing)
        fn = _compiled_rule(st, only)
        sets = [[t.get(a.pos, jnp.zeros(a.shape, a.dtype)) for a in st.diff] for _, t in missing]
        out, exc = quiet_call(lambda: jax.block_until_ready(fn([a.value for a in st.args if not a.static], sets)))
        if exc is None:
            for (key, _), tangent_out in zip(missing, out):
                memo[key] = tangent_leaves(st, tangent_out)
            return
    for key, tangents in missing:  # eager, one by one; symbolic-zero sets are left to jvp-symbolic-zeros
        if key[0] != "z":
            T(st, key, tangents)


def _compiled_rule(st: GradState, only: tuple[int | None, ...]) -> Any:
    """jit of the rule applied to several tangent sets, memoised per rule. Set i passes symbolic zeros for every
    argument but `only[i]` when that is not None."""
    rule = jvp_rule(st)
    key = (id(rule), id(st.subject.obj), repr(sorted(st.subject.params.items(), key=lambda kv: kv[0])),
           tuple(str(s) for s in st.subject.specs), repr(st.subject.static_args),
           tuple(repr(st.args[i].value) for i in st.nondiff), only, _compat.x64_enabled())
    hit = _COMPILED.get(key)
    if hit is not None and hit[0] is rule:
        return hit[1]
    arrays = [a.pos for a in st.args if not a.static]

    def many(values: list[Any], sets: list[list[Any]]) -> list[Any]:
        full = dict(zip(arrays, values))
        primals = [full.get(a.pos, a.value) for a in st.args]
        outs = []
        for ts, pos in zip(sets, only):
            tangents = {a.pos: t for a, t in zip(st.diff, ts) if pos is None or a.pos == pos}
            outs.append(_call_jvp_with(st, primals, tangents, symbolic=pos is not None)[1])
        return outs

    fn = jax.jit(many)
    _COMPILED[key] = (rule, fn)
    while len(_COMPILED) > 64:
        _COMPILED.popitem(last=False)
    return fn


def _call_jvp_with(st: GradState, values: list[Any], tangents: dict[int, Any], symbolic: bool = False) -> Any:
    """The rule on explicit primal values (traceable, no error handling: for jit)."""
    rule = jvp_rule(st)
    if st.kind == "primitive":
        tans = [tangents[a.pos] if a.pos in tangents else _zero_for(st, a, symbolic) for a in st.args]
        return rule(values, tans, **st.subject.params)
    primals = tuple(values[a.pos] for a in st.dyn)
    tans = tuple(tangents[a.pos] if a.pos in tangents else _zero_for(st, a, symbolic) for a in st.dyn)
    return rule(*[values[i] for i in st.nondiff], primals, tans)


def joint(st: GradState, d: int, scale: float = 1.0) -> dict[int, Any]:
    return {a.pos: st.tangent(a, d) * scale for a in st.diff}


# ---------------------------------------------------------------------------------------------------------------
# jvp-rule-output: presence, raising, pair, primal, tangent structure/shape/dtype
# ---------------------------------------------------------------------------------------------------------------


@check("jvp-rule-output", family="grad", kinds=KINDS)
def jvp_rule_output(ctx: Context) -> Iterator[Finding]:
    st = state(ctx)
    if st.kind == "primitive" and jvp_rule(st) is None:
        yield from _missing_jvp(st, ctx)
        return
    if st.kind == "custom_jvp" and st.jvp_rule is None:
        st.blocked["JXG017"] = "no JVP rule"
        fun, _ = names(st)
        yield rules.DERIVATIVE_RULE_RAISED.finding(
            f"{fun} is a custom_jvp without a rule: defjvp was never called, so every call fails with "
            f"`AttributeError: No JVP defined for custom_jvp function {fun} using defjvp`.",
            fix=f"Decorate the rule with `@{fun}.defjvp` (or call `{fun}.defjvp(rule)`).", location=st.subject.location)
        return
    if not st.diff:
        raise SkipCheck("no floating-point argument to differentiate")
    expected = st.out
    result, exc = call_jvp(st, joint(st, 0))
    if exc is not None:
        st.blocked["JXG017"] = "the JVP rule raised"
        yield _raised(st, exc)
        return
    pair = _split(st, result)
    if pair is None:
        st.blocked["JXG007"] = "the rule does not return a pair"
        yield _not_pair(st, result)
        return
    yield from _primal_findings(st, pair[0], expected)
    yield from _tangent_findings(st, pair[0], pair[1])


def _missing_jvp(st: GradState, ctx: Context) -> Iterator[Finding]:
    prim = st.subject.obj.name
    if not st.diff:
        raise SkipCheck("no floating-point argument: no JVP rule needed")
    st.blocked["JXR006"] = "no JVP rule"
    severity = "info" if ctx.options.command == "check" else None
    yield rules.MISSING_JVP_RULE.finding(
        f"{prim} has no JVP rule: jax.grad, jax.jvp and jacfwd fail with `NotImplementedError: Differentiation rule "
        f"for '{prim}' not implemented`.",
        fix=f"Register one: `ad.defjvp({_var(st)}, lambda g, {', '.join(a.name for a in st.args)}, **params: ...)` "
            "(one function per argument), or `ad.primitive_jvps[prim] = rule` with rule(primals, tangents, "
            "**params) -> (primal_out, tangent_out).",
        location=st.subject.location, severity=severity)


def _var(st: GradState) -> str:
    loc = st.subject.location
    return loc.function if loc is not None and loc.function.isidentifier() else f"{st.subject.obj.name}_p"


def _raised(st: GradState, exc: BaseException) -> Finding:
    fun, rule = names(st)
    fns = [f for f in user_rules(st) if f is not None]
    text = error_text(exc, fns[0] if fns else None)
    ints = [a for a in st.dyn if not a.diff and not a.static]
    if ints and ("float0" in str(exc) or "('V')" in str(exc) or "'V'" in str(exc)):
        return rules.FLOAT0_TANGENT_UNHANDLED.finding(
            f"{rule} raised {text}: the tangent of the integer argument(s) "
            f"{', '.join(a.text for a in ints)} is a float0 array (JAX passes float0 zeros for integer and bool "
            "inputs), and the rule uses it in arithmetic.",
            fix=f"In {rule}, ignore the tangents of {', '.join(a.name for a in ints)} (they are always zero), or "
                "mark the argument in nondiff_argnums.", location=rule_location(st))
    if st.kind == "primitive" and "Zero" in str(exc):
        return rules.SYMBOLIC_ZERO_UNHANDLED.finding(
            f"{rule} raised {text}: the tangent of an integer argument ({', '.join(a.text for a in ints)}) is a "
            "symbolic ad.Zero.", fix="Test `type(t) is ad.Zero` or use `ad.instantiate_zeros(t)`.",
            location=rule_location(st))
    if st.kind == "custom_jvp" and st.nondiff:
        nondiff = [st.args[i].value for i in st.nondiff]
        primals = tuple(a.value for a in st.dyn)
        tans = tuple(st.tangent(a, 0) if a.diff else _zero_for(st, a, False) for a in st.dyn)
        _, other = quiet_call(st.jvp_rule, primals, tans, *nondiff)
        if other is None:
            nd = ", ".join(st.args[i].name for i in st.nondiff)
            return rules.NONDIFF_ARGNUMS_MISUSE.finding(
                f"{rule} raised {text}: JAX calls it as {rule}({nd}, primals, tangents) (nondiff_argnums "
                f"{st.nondiff} come first) but it is written as {rule}(primals, tangents, {nd}).",
                fix=f"Put the non-differentiable arguments first: `def {rule}({nd}, primals, tangents):`.",
                location=rule_location(st))
    return rules.DERIVATIVE_RULE_RAISED.finding(
        f"{rule} raised {text} when called as JAX calls it (primals {', '.join(a.text for a in st.args)} with random "
        "tangents).", fix=f"Make {rule} work for these inputs; it must return (primal_out, tangent_out).",
        location=rule_location(st))


def _not_pair(st: GradState, result: Any) -> Finding:
    fun, rule = names(st)
    return rules.JVP_OUTPUT_STRUCTURE.finding(
        f"{rule} must return a pair (primal_out, tangent_out) but returned {aval_text(result)}. JAX reports `must "
        "produce a pair`, or, when the tangent's leading dimension is 2, silently unpacks its rows as (primal, "
        "tangent).", fix=f"Return both: `return {fun}_out, tangent_out` in {rule}.", location=rule_location(st))


def _primal_findings(st: GradState, primal: Any, expected: Any) -> Iterator[Finding]:
    fun, rule = names(st)
    got = _primal_leaves(st, primal)
    if got is None:
        st.blocked["JXG021"] = "primal structure differs"
        yield rules.JVP_PRIMAL_MISMATCH.finding(
            f"{rule}'s primal output is {aval_text(primal)} but {fun} returns {aval_text(expected)}: JAX does not "
            "check this; under jax.jvp the caller gets the rule's structure and jax.grad later fails (e.g. "
            "`TypeError: iteration over a 0-d array`).",
            fix=f"Return exactly {fun}'s output as the first element of {rule}'s pair (call {fun} on the primals).",
            location=rule_location(st))
        return
    for name, g, want in zip(st.out_names, got, st.out_leaves):
        problem = leaf_difference(g, want)
        if problem is None:
            continue
        if "shape" in problem:
            st.blocked["JXG021"] = "primal shape differs"
        yield rules.JVP_PRIMAL_MISMATCH.finding(
            f"{rule}'s primal {name} differs from {fun}'s: {problem}. JAX does not check it: under jax.jvp and "
            f"jax.grad the function silently returns the rule's value.",
            fix=f"Compute the primal in {rule} exactly as {fun} does (e.g. `out = {fun}(x)` inside the rule).",
            location=rule_location(st))


def _primal_leaves(st: GradState, primal: Any) -> list[Any] | None:
    if st.kind == "primitive":
        if st.subject.obj.multiple_results:
            ok = isinstance(primal, (tuple, list)) and len(primal) == len(st.out_leaves)
            return list(primal) if ok else None
        return [primal] if hasattr(primal, "shape") else None
    if jax.tree_util.tree_structure(primal) != st.out_treedef:
        return None
    return jax.tree_util.tree_leaves(primal)


def _tangent_findings(st: GradState, primal: Any, tangent: Any) -> Iterator[Finding]:
    fun, rule = names(st)
    if st.kind == "primitive":
        leaves = list(tangent) if st.subject.obj.multiple_results and isinstance(tangent, (tuple, list)) \
            else None if st.subject.obj.multiple_results else [tangent]
        ok = leaves is not None and len(leaves) == len(st.out_leaves)
    else:
        is_leaf = lambda x: x is None or _compat.is_symbolic_zero(x)  # noqa: E731
        ok = jax.tree_util.tree_structure(tangent, is_leaf=is_leaf) == jax.tree_util.tree_structure(primal)
        leaves = jax.tree_util.tree_leaves(tangent, is_leaf=is_leaf)
    if not ok:
        st.blocked["JXG007"] = "tangent structure differs"
        yield rules.JVP_OUTPUT_STRUCTURE.finding(
            f"{rule}'s tangent output is {aval_text(tangent)} but the primal output is {aval_text(primal)}: they "
            "must have the same pytree structure (tuple vs list matters).",
            fix=f"Return the tangents in the primal's container: e.g. `return (a, b), (ta, tb)` in {rule}.",
            location=rule_location(st))
        return
    for name, t, p in zip(st.out_names, leaves, st.out_leaves):
        if t is None or _compat.is_symbolic_zero(t):
            continue
        want_dtype = _compat.tangent_dtype(p.dtype)
        t_shape, t_dtype = tuple(np.shape(t)), np.asarray(t).dtype if not hasattr(t, "dtype") else np.dtype(t.dtype)
        if t_shape != tuple(np.shape(p)):
            st.blocked["JXG007"] = "tangent shape differs"
            yield rules.JVP_OUTPUT_STRUCTURE.finding(
                f"{rule}'s tangent for {name} has shape {aval_text(t)} but the primal is {aval_text(p)}: jax.jvp "
                "may accept it silently, and jax.grad then fails with an unrelated IndexError (or `Custom JVP rule "
                "must produce primal and tangent outputs with corresponding shapes and dtypes`).",
                fix=f"Return a tangent of shape {tuple(np.shape(p))} for {name} (no extra or missing axes).",
                location=rule_location(st))
        elif t_dtype != np.dtype(want_dtype) and not (want_dtype == _compat.float0 and t_dtype.kind in "biu"):
            yield rules.JVP_OUTPUT_STRUCTURE.finding(
                f"{rule}'s tangent for {name} is {short_dtype(t_dtype)} but the primal is {aval_text(p)}, whose "
                f"tangent dtype is {short_dtype(want_dtype)}.",
                fix=f"Cast the tangent: `.astype({short_dtype(want_dtype)})` (float0 for integer outputs).",
                location=rule_location(st))


# ---------------------------------------------------------------------------------------------------------------
# jvp-linearity
# ---------------------------------------------------------------------------------------------------------------


def _violation(lhs: Sequence[np.ndarray], rhs: Sequence[np.ndarray], scale: float, tol: float) -> float | None:
    """The largest |lhs - rhs| when it exceeds `tol * scale`, else None."""
    worst = max((float(np.max(np.abs(a - b))) if a.size else 0.0 for a, b in zip(lhs, rhs)), default=0.0)
    return worst if worst > tol * scale + 1e-30 else None


# Homogeneity is tested with a negative, non-unit scale: abs(t) is positively homogeneous and would pass with 2.
SCALE = -1.5


@check("jvp-linearity", family="grad", kinds=KINDS)
def jvp_linearity(ctx: Context) -> Iterator[Finding]:
    """Additivity, homogeneity and zero-in-zero-out of the tangent map (JXG020)."""
    st = state(ctx)
    require(st)
    if not st.diff or N_DIRECTIONS < 2:
        raise SkipCheck("no floating-point argument to differentiate")
    both = {a.pos: st.tangent(a, 0) + st.tangent(a, 1) for a in st.diff}
    symbolic = [(("z", a.pos), {a.pos: st.tangent(a, 0)}) for a in _symbolic_candidates(st)]
    T_many(st, [(("j", 1), joint(st, 1)), (("j", "0+1"), both), (("j", "cx0"), joint(st, 0, SCALE)), *symbolic])
    t1, t2 = T(st, ("j", 0), joint(st, 0)), T(st, ("j", 1), joint(st, 1))
    t12 = T(st, ("j", "0+1"), both)
    tcx = T(st, ("j", "cx0"), joint(st, 0, SCALE))
    if any(t is None for t in (t1, t2, t12, tcx)):
        raise SkipCheck("the JVP rule raised for some tangents (reported by jvp-rule-output)")
    tol = max(grad_tol(p.dtype) for p in st.out_leaves if is_inexact(p.dtype)) if any(
        is_inexact(p.dtype) for p in st.out_leaves) else 1e-3
    scale = max(float(np.max(np.abs(x), initial=0.0)) for x in (*t1, *t2))
    add = _violation(t12, [a + b for a, b in zip(t1, t2)], scale, tol)
    hom = _violation(tcx, [SCALE * a for a in t1], scale, tol)
    if add is None and hom is None:
        return  # an affine offset c breaks both (cT(v) gains cc, T(cv) only c), so zero -> zero holds too
    t0 = T(st, ("j", "zero"), {a.pos: jnp.zeros(a.shape, a.dtype) for a in st.diff}) or []
    zero = _violation(t0, [np.zeros_like(x) for x in t0], scale, tol)
    st.blocked["JXG020"] = "the tangent map is not linear"
    yield _nonlinear_finding(st, t0, t1, tcx, zero, add, hom)


def _nonlinear_finding(st: GradState, t0: list, t1: list, tcx: list, zero: float | None, add: float | None,
                       hom: float | None) -> Finding:
    fun, rule = names(st)
    observed = []
    if zero is not None:
        observed.append(f"a zero tangent gives {fmt_values(_first_nonzero(t0))} instead of 0 (affine: the rule adds a "
                        "term that does not depend on the tangents)")
    if hom is not None:
        ratio = _ratio(tcx, t1)
        observed.append(f"scaling the tangent by {SCALE:g} scales the output tangent by {ratio:.4g} instead of "
                        f"{SCALE:g}")
    if add is not None:
        observed.append(f"T(t1 + t2) differs from T(t1) + T(t2) by up to {add:.3g}")
    consequence = _reverse_consequence(st)
    return rules.JVP_NOT_LINEAR.finding(
        f"{rule}'s tangent output is not linear in the input tangents: " + "; ".join(observed) + ". " + consequence,
        fix=f"Make every tangent term in {rule} linear in the tangents: multiply them by primal-only factors "
            "(`cos(x) * t`, not `t ** 2`, `abs(t)`, `t * t2` or `+ 1.0`).", location=rule_location(st))


def _first_nonzero(leaves: list[np.ndarray]) -> np.ndarray:
    for leaf in leaves:
        if np.any(leaf):
            return leaf
    return leaves[0]


def _ratio(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    """The signed factor c that best explains a = c b (least squares), so a sign flip shows."""
    num = sum(float(np.real(np.sum(np.conj(y) * x))) for x, y in zip(a, b))
    den = sum(float(np.real(np.sum(np.conj(y) * y))) for y in b)
    return num / den if den else float("inf")


def _reverse_consequence(st: GradState) -> str:
    """What reverse mode does with this rule: JAX's error, or forward and reverse numbers that disagree."""
    ws, cts, exc = pullback_at_first_cotangent(st)
    if exc is not None:
        return ("jax.jvp runs, but jax.grad must transpose the tangent computation and fails with "
                f"`{type(exc).__name__}: {short_message(exc, 200)}`, naming a lax primitive rather than your rule.")
    if cts is None:
        return ""
    fwd = sum(dot(w, t) for w, t in zip(ws, T(st, ("j", 0), joint(st, 0)) or []) if not is_float0(w))
    rev = sum(dot(ct, st.tangent(a, 0)) for ct, a in zip(cts, st.diff))
    return (f"jax.grad silently keeps only the linear part, so forward and reverse mode disagree: <w, J v> is "
            f"{fwd:.6g} by jax.jvp/jacfwd but {rev:.6g} by jax.grad/jacrev.")


def eager_vjp(st: GradState) -> tuple[Any, BaseException | None]:
    """jax.vjp of the subject itself (through JAX's machinery, eagerly) at the example: (fn, None) where
    fn(ws) -> cotangents per differentiable argument (None if the pullback raised), or (None, exc)."""
    if "eager_vjp" not in st.memo:
        res, exc = quiet_call(jax.vjp, st.diff_fn(st.call_target), *st.diff_values)
        if exc is not None:
            st.memo["eager_vjp"] = (None, exc)
        else:
            pullback = res[1]

            def apply(ws: Sequence[Any]) -> list[Any] | None:
                key = ("ct", id(ws))
                if key not in st.memo:
                    conj = [jnp.conj(w) if np.asarray(w).dtype.kind == "c" else w for w in ws]
                    out, err = quiet_call(pullback, jax.tree_util.tree_unflatten(st.out_treedef, conj))
                    st.memo[key] = None if err is not None else [
                        np.conj(np.asarray(o)) if np.asarray(o).dtype.kind == "c" else np.asarray(o) for o in out]
                    st.memo[("ct_err", id(ws))] = err
                return st.memo[key]

            st.memo["eager_vjp"] = (apply, None)
    return st.memo["eager_vjp"]


def pullback_at_first_cotangent(st: GradState) -> tuple[Any, Any, BaseException | None]:
    """(ws, cotangents, error) of the subject's eager VJP at the first seeded output cotangent `ws`: cotangents per
    differentiable argument, or the error raised by jax.vjp or by the pullback."""
    vjp, exc = eager_vjp(st)
    ws = st.cotangents(0)
    cts = vjp(ws) if vjp is not None else None
    if exc is None and cts is None:
        exc = st.memo.get(("ct_err", id(ws)))
    return ws, cts, exc


# ---------------------------------------------------------------------------------------------------------------
# jvp-reference: finite differences and autodiff of the undecorated primal
# ---------------------------------------------------------------------------------------------------------------


# JAX primitives whose derivative is deliberately not the numerical one (checked with --include-jax).
_DEFINED_DERIVATIVE = {"stop_gradient"}


@check("jvp-reference", family="grad", kinds=KINDS)
def jvp_reference(ctx: Context) -> Iterator[Finding]:
    """Tangents along each argument vs float64 finite differences (and autodiff of custom_jvp.fun)."""
    st = state(ctx)
    require(st)
    if not st.diff:
        raise SkipCheck("no floating-point argument to differentiate")
    if st.kind == "primitive" and st.subject.obj.name in _DEFINED_DERIVATIVE and _compat.is_builtin_primitive(
            st.subject.obj):
        raise SkipCheck(f"{st.subject.obj.name}'s derivative is zero by definition")
    problems = []
    for d in range(N_DIRECTIONS):
        if _joint_agrees(st, d):
            continue
        # the joint direction disagrees: find the argument(s) responsible, one at a time
        problems.extend(p for a in st.diff if (p := _compare_direction(st, a, d)) is not None)
        if problems:
            break
    if problems:
        yield _reference_finding(st, problems)


def _joint_agrees(st: GradState, d: int) -> bool:
    """T(v) for a step in every argument at once against finite differences (or autodiff) along v."""
    if len(st.diff) == 1:
        return _compare_direction(st, st.diff[0], d) is None
    got = T(st, ("j", d), joint(st, d))
    fd = st.fd.joint(d)
    if got is None or fd is None:
        return True
    tol = max(grad_tol(a.dtype) for a in st.diff)
    return all(close(g, f, tol) for g, f, p in zip(got, fd.jv, st.out_leaves) if is_inexact(p.dtype))


def _compare_direction(st: GradState, a: Arg, d: int) -> dict | None:
    got = T(st, ("a", a.pos, d), {a.pos: st.tangent(a, d)})
    fd = st.fd.jv(a, d)
    if got is None or fd is None:
        return None
    tols = [grad_tol(a.dtype if not is_inexact(p.dtype) else _wider(a.dtype, p.dtype)) for p in st.out_leaves]
    bad = [k for k, (g, f, p) in enumerate(zip(got, fd.jv, st.out_leaves))
           if is_inexact(p.dtype) and not close(g, f, tols[k])]
    if not bad:
        return None
    cmps = {k: compare(got[k], fd.jv[k], tol=tols[k]) for k in bad}
    ref = _reference_tangents(st, a, d)
    if ref is not None and all(close(got[k], ref[k], grad_tol(a.dtype)) for k in bad):
        return None  # the rule reproduces JAX's derivative of the primal; FD sees a kink or a stop_gradient
    if ref is None and not st.fd.stable(a, d):
        return None
    k = bad[0]
    return {"arg": a, "d": d, "k": k, "got": got[k], "fd": fd.jv[k], "cmp": cmps[k],
            "ref": None if ref is None else ref[k]}


def _wider(a: Any, b: Any) -> Any:
    return a if grad_tol(a) >= grad_tol(b) else b


def _reference_tangents(st: GradState, a: Arg, d: int) -> list[np.ndarray] | None:
    if st.kind != "custom_jvp":
        return None
    tangents = [st.tangent(b, d) if b is a else jnp.zeros(b.shape, b.dtype) for b in st.diff]
    ref = st.reference_jvp(tangents)
    return None if ref is None else [to_f64(r) for r in ref]


def _reference_finding(st: GradState, problems: list[dict]) -> Finding:
    fun, rule = names(st)
    details = []
    for p in problems[:3]:
        a, name = p["arg"], st.out_names[p["k"]]
        text = (f"tangent of {name} for a step in {a.name}: the rule gives {fmt_values(p['got'])}, float64 finite "
                f"differences give {fmt_values(p['fd'])} ({p['cmp'].describe()})")
        if p["ref"] is not None:
            text += f", autodiff of {fun} gives {fmt_values(p['ref'])}"
        details.append(text)
    if st.kind == "primitive":
        loc = rule_location(st, problems[0]["arg"])
        return rules.JVP_MISMATCH.finding(
            f"{rule} disagrees with finite differences of {fun}'s impl: " + "; ".join(details) + ". jax.grad and "
            "jax.jvp return these wrong derivatives without any error.",
            fix=f"Fix the derivative formula in {rule} for {problems[0]['arg'].name} (check the chain-rule factor and "
                "the sign).", location=loc)
    loc = rule_location(st)
    where = f" ({loc})" if loc else ""
    return rules.CUSTOM_DERIVATIVE_MISMATCH.finding(
        f"{rule}'s tangents differ from the derivative of {fun}: " + "; ".join(details) + ". This may be intended "
        "(gradient clipping, straight-through estimators, surrogate gradients); otherwise jax.grad and jax.jvp "
        "are silently wrong.",
        fix=f"If deliberate, add `# jaxdiag: ignore[JXG014]` to the def line of {rule}{where}; otherwise fix the "
            f"tangent formula (compare with jax.jvp({fun}.fun, ...)).", location=loc)


# ---------------------------------------------------------------------------------------------------------------
# Symbolic zeros (custom_jvp symbolic_zeros=True, primitive ad.Zero)
# ---------------------------------------------------------------------------------------------------------------


def _symbolic_candidates(st: GradState) -> list[Arg]:
    """Arguments differentiated alone while JAX passes symbolic zeros for the others (none for one argument:
    JAX never calls a rule with only zero tangents; none for custom_jvp without symbolic_zeros=True)."""
    if st.kind == "custom_jvp" and not st.symbolic_zeros:
        return []
    others = [a for a in st.dyn if not a.static] if st.kind == "custom_jvp" else st.args
    return list(st.diff) if len(others) >= 2 else []


@check("jvp-symbolic-zeros", family="grad", kinds=KINDS)
def jvp_symbolic_zeros(ctx: Context) -> Iterator[Finding]:
    """With one argument differentiated, JAX passes the others' tangents as symbolic zeros (JXG006)."""
    st = state(ctx)
    require(st, ("JXR006", "JXG017", "JXG007"))
    if st.kind == "custom_jvp" and not st.symbolic_zeros:
        raise SkipCheck("defjvp without symbolic_zeros=True: JAX instantiates zero tangents")
    if not _symbolic_candidates(st):
        raise SkipCheck("a single argument: JAX never calls the rule with only zero tangents")
    candidates = [a for a in st.dyn if not a.static] if st.kind == "custom_jvp" else st.args
    for a in _symbolic_candidates(st):
        if ("z", a.pos) in st.memo.get("T", {}):
            continue  # ran inside the compiled call of jvp-linearity
        _, exc = call_jvp(st, {a.pos: st.tangent(a, 0)}, symbolic=True)
        if exc is None:
            continue
        fun, rule = names(st)
        remember_error(st, exc)
        st.blocked["JXG006"] = "the JVP rule fails on symbolic zeros"
        zero = "jax.custom_derivatives.SymbolicZero" if st.kind == "custom_jvp" else "ad.Zero"
        others = ", ".join(b.name for b in candidates if b is not a)
        yield rules.SYMBOLIC_ZERO_UNHANDLED.finding(
            f"{rule} raised {error_text(exc, user_rules(st)[0] if user_rules(st) else None)} when only {a.name} is "
            f"differentiated: the tangents of {others} then arrive as symbolic zeros ({zero}), e.g. under "
            f"jax.grad(f, argnums={a.pos}).",
            fix=(f"In {rule}, test `type(t) is {zero}` before using a tangent"
                 + (" or use `ad.instantiate_zeros(t)`." if st.kind == "primitive" else ".")),
            location=rule_location(st))
        return


def remember_error(st: GradState, exc: BaseException) -> None:
    """Errors already explained by a finding: JAX re-raising them later in reverse mode is not a new finding."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    st.memo.setdefault("reported_errors", set()).add(first)


# ---------------------------------------------------------------------------------------------------------------
# Reverse mode of a custom_jvp
# ---------------------------------------------------------------------------------------------------------------


@check("jvp-reverse", family="grad", kinds={"custom_jvp"})
def jvp_reverse(ctx: Context) -> Iterator[Finding]:
    """jax.grad transposes the rule's tangent computation: it must run and agree with forward mode."""
    st = state(ctx)
    require(st)
    if not st.diff or not any(st.out_diff(k) for k in range(len(st.out_leaves))):
        raise SkipCheck("nothing to differentiate")
    fun, rule = names(st)
    ws, cts, exc = pullback_at_first_cotangent(st)
    if exc is not None:
        yield rules.DERIVATIVE_RULE_RAISED.finding(
            f"jax.jvp of {fun} works but reverse mode fails: jax.vjp/jax.grad raised {error_text(exc, st.jvp_rule)}. "
            "jax.grad transposes the tangent computation of the rule, so every operation applied to a tangent "
            "must be linear and traceable (no comparisons or NumPy conversions of tangents).",
            fix=f"Write {rule}'s tangent output as primal-only factors times the tangents.",
            location=rule_location(st))
        return
    fwd_t = T(st, ("j", 0), joint(st, 0))
    if cts is None or fwd_t is None:
        return
    fwd = sum(dot(w, t) for w, t in zip(ws, fwd_t) if not is_float0(w))
    rev = sum(dot(ct, st.tangent(a, 0)) for ct, a in zip(cts, st.diff))
    scale = sum(float(np.sum(np.abs(to_f64(w)) * np.abs(t))) for w, t in zip(ws, fwd_t)
                if not is_float0(w))
    tol = max(grad_tol(a.dtype) for a in st.diff)
    if abs(fwd - rev) > tol * (scale + 1e-30):
        yield rules.JVP_NOT_LINEAR.finding(
            f"Forward and reverse mode of {fun} disagree: <w, J v> = {fwd:.6g} with jax.jvp but <J^T w, v> = "
            f"{rev:.6g} with jax.vjp (tolerance {tol:.0e}); the tangent computation in {rule} is not a linear map "
            "that JAX can transpose consistently.",
            fix=f"Make {rule}'s tangent output linear in the tangents.", location=rule_location(st))


CHECKS = [jvp_rule_output, jvp_linearity, jvp_reference, jvp_symbolic_zeros, jvp_reverse]
