"""Checks against references: tangents vs float64 finite differences and autodiff of the undecorated primal
(JXG014 / JXG001), symbolic zero tangents (JXG006), and reverse mode of a custom_jvp.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ... import _compat
from ... import _rules as rules
from ..._loading._numerics import compare
from ..._core._report import Finding
from .._base import Context, SkipCheck, check
from .._shared import removed_api, removed_api_finding, user_frame_location
from .._gradref import (
    JVP_BLOCKERS, N_DIRECTIONS, Arg, GradState, all_finite, central_at, close, conjugated, constant_factor,
    deliberate_disagreement, device_zeros, dot, error_text, fmt_values, grad_tol, is_float0, is_inexact, locate,
    kink_at_point, moved_values, nonfinite_split, passed_through, require, right_beside_kink, sampled_estimate, state,
    tangent_in_expectation, all_unbiased, first_biased, to_f64, value_at,
)
from ._boundary import reverse_nonfinite
from ._call import (
    KINDS, T, _call_jvp_with, _split, _symbolic_candidates, call_jvp, joint, names, rule_location, tangent_leaves,
    user_rules,
)
from ._linearity import pullback_at_first_cotangent, rounding_floor

# ---------------------------------------------------------------------------------------------------------------
# jvp-reference: finite differences and autodiff of the undecorated primal
# ---------------------------------------------------------------------------------------------------------------


# JAX primitives whose derivative is deliberately not the numerical one (checked with --include-jax).
_DEFINED_DERIVATIVE = {"stop_gradient"}


@check("jvp-reference", family="grad", kinds=KINDS,
       reads=("grad.blocked.jvp-rule-output", "grad.blocked.jvp-linearity"),
       provides=("grad.jvp_tangents", "grad.second_order_moot", "grad.second_order_held"))
def jvp_reference(ctx: Context) -> Iterator[Finding]:
    """Tangents along each argument vs float64 finite differences (and autodiff of custom_jvp.fun)."""
    st = state(ctx)
    require(st)
    if not st.diff:
        raise SkipCheck("no floating-point argument to differentiate")
    if st.kind == "primitive" and st.subject.obj.name in _DEFINED_DERIVATIVE and _compat.is_builtin_primitive(
            st.subject.obj):
        raise SkipCheck(f"{st.subject.obj.name}'s derivative is zero by definition")
    st.out  # noqa: B018  (a primal that fails on the example skips the check: a rule that raises too compares nothing)
    problems: list[Any] = []
    for d in range(N_DIRECTIONS):
        if _joint_agrees(st, d):
            continue
        # the joint direction disagrees: find the argument(s) responsible, one at a time
        problems.extend(p for a in st.diff if (p := _compare_direction(st, a, d)) is not None)
        if problems:
            break
    if problems and (finding := _reference_finding(st, problems)) is not None:
        if rules.rule(finding.code).severity == "error":
            st.memo.second_order_moot = f"the first-order derivative is already wrong ({finding.code})"
        yield finding


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
    ref = _reference_tangents(st, a, d, raw=True)
    for k in bad:  # NaN/inf on the rule's side only, against autodiff of the primal (else finite differences)
        nf = nonfinite_split(got[k], ref[k] if ref is not None else fd.jv[k])
        if nf.rule_only:
            return {"arg": a, "d": d, "k": k, "got": got[k], "fd": fd.jv[k], "cmp": cmps[k], "nonfinite": nf,
                    "ref": None if ref is None else ref[k]}
    if ref is not None and not all_finite(ref):
        ref = None
    if ref is not None and all(close(got[k], ref[k], grad_tol(a.dtype)) for k in bad):
        return None  # the rule reproduces JAX's derivative of the primal; FD sees a kink or a stop_gradient
    if ref is None and not st.fd.stable(a, d):
        return None
    if kink_at_point(st, (a,), d, bad) and right_beside_kink(st, (a,), d, _right_beside(st, a, d, bad)):
        return None  # the example sits on a kink along the step: the rule chose its value there, right beside it
    k = bad[0]
    return {"arg": a, "d": d, "k": k, "got": got[k], "fd": fd.jv[k], "cmp": cmps[k],
            "ref": None if ref is None else ref[k]}


def _right_beside(st: GradState, a: Arg, d: int, leaves: list[int]) -> Any:
    """Judge for `right_beside_kink`: the rule's tangent for direction `d` of `a` with the arguments moved, against
    central differences of the primal there, on the output leaves `leaves`."""
    tol = grad_tol(a.dtype)

    def agrees_at(moved: dict[int, np.ndarray]) -> bool:
        pair = _split(st, _call_jvp_with(st, moved_values(st, moved), {a.pos: st.tangent(a, d)}))
        want = central_at(st, (a,), d, moved)
        if pair is None or want is None:
            return False
        got = tangent_leaves(st, pair[1])
        return all(close(got[k], want[k], tol) for k in leaves)

    return agrees_at


def _wider(a: Any, b: Any) -> Any:
    return a if grad_tol(a) >= grad_tol(b) else b


def _reference_tangents(st: GradState, a: Arg, d: int, raw: bool = False) -> list[np.ndarray] | None:
    """Autodiff of the undecorated primal along direction `d` of `a` (with its NaN/inf entries only when `raw`)."""
    if st.kind != "custom_jvp":
        return None
    tangents = [st.tangent(b, d) if b is a else device_zeros(b.shape, b.dtype) for b in st.diff]
    ref = st.reference_jvp(tangents, raw=raw)
    return None if ref is None else [to_f64(r) for r in ref]


def _deliberate(st: GradState, p: dict) -> bool:
    """The rule's tangent differs from the reference (autodiff of the primal, else float64 finite differences,
    both elementwise) only as a clip, a stop-gradient or a straight-through tangent would."""
    if p["cmp"].nonfinite:
        return True
    reference = p["ref"] if p["ref"] is not None else p["fd"]
    passed = st.tangent(p["arg"], p["d"])
    if not deliberate_disagreement(p["got"], reference, passed, p["arg"].dtype):
        return False
    return passed_through(p["got"], passed, p["arg"].dtype) or _uniform_scale(st, p) is None


def _uniform_scale(st: GradState, p: dict) -> float | None:
    """The factor `c` when the rule's tangent is the reference's times the same `c` along every direction (the
    problem's and the other seeded ones): a scaled derivative, not a clip (see `constant_factor`)."""
    a, k = p["arg"], p["k"]
    pairs = [(p["got"], p["ref"] if p["ref"] is not None else p["fd"])]
    for d in range(N_DIRECTIONS):
        if d == p["d"]:
            continue
        got = T(st, ("a", a.pos, d), {a.pos: st.tangent(a, d)})
        ref = _reference_tangents(st, a, d)
        fd = st.fd.jv(a, d)
        want = ref[k] if ref is not None and p["ref"] is not None else (fd.jv[k] if fd is not None else None)
        if got is None or want is None:
            return None
        pairs.append((got[k], want))
    return constant_factor(pairs, a.dtype)


def _flat_primal(problems: list[dict]) -> dict | None:
    """The first problem when in every one the rule's tangent is finite and nonzero for a step in an argument in which
    autodiff of the primal is exactly zero (sampling, comparisons, rounding): a surrogate by construction (JXG033)."""
    for p in problems:
        got = to_f64(p["got"])
        if p["ref"] is None or np.any(to_f64(p["ref"])) or not np.any(got) or not np.all(np.isfinite(got)):
            return None
    return problems[0] if problems else None


def _flat_impl(st: GradState, problems: list[dict]) -> dict | None:
    """For a primitive: the first problem when in every one the rule's tangent is finite and nonzero while finite
    differences of the impl are exactly zero at every step they took (`stable`: no kink beside the example), so the
    impl does not move with that operand at all (an event kernel reading `spikes > 0`, a rounding one): its JVP is a
    surrogate by construction (JXG033), not a derivative gone wrong."""
    for p in problems:
        got = to_f64(p["got"])
        if (np.any(to_f64(p["fd"])) or not np.any(got) or not np.all(np.isfinite(got))
                or not st.fd.stable(p["arg"], p["d"])):
            return None
    return problems[0] if problems else None


def _ignored_argument(st: GradState, problems: list[dict]) -> dict | None:
    """The first problem when every problem is an argument whose tangent the rule ignores (a zero tangent output for
    a step in it along every seeded direction, where the reference is nonzero), and some other argument's tangent
    is used: the rule treats that argument as a constant (JXG034)."""
    ignored = {p["arg"].pos for p in problems}
    if not problems or len(ignored) == len(st.diff):
        return None
    for p in problems:
        want = p["ref"] if p["ref"] is not None else p["fd"]
        if not np.any(to_f64(want)) or not _ignores(st, p["arg"]):
            return None
    return problems[0]


def _ignores(st: GradState, a: Arg) -> bool:
    """The rule's tangent output is zero for a step in `a` along every seeded direction."""
    for d in range(N_DIRECTIONS):
        got = T(st, ("a", a.pos, d), {a.pos: st.tangent(a, d)})
        if got is None or any(np.any(to_f64(g)) for g, leaf in zip(got, st.out_leaves)
                              if is_inexact(leaf.dtype) and not is_float0(g)):
            return False
    return True


def _constant_output(st: GradState, problems: list[dict]) -> dict | None:
    """The first problem when the rule holds one or more outputs constant (an exactly zero tangent for a step in every
    argument along every seeded direction, where the reference moves) and gets every other output right, one of
    them moving: an auxiliary output not differentiated (JXG037), not a derivative gone wrong."""
    outputs = [k for k, leaf in enumerate(st.out_leaves) if is_inexact(leaf.dtype)]
    if len(outputs) < 2 or not problems:
        return None
    held: set[int] = set(outputs)
    seen: list[tuple[Arg, int, list[Any]]] = []
    for a in st.diff:
        for d in range(N_DIRECTIONS):
            got = T(st, ("a", a.pos, d), {a.pos: st.tangent(a, d)})
            if got is None:
                return None
            held -= {k for k in outputs if not is_float0(got[k]) and np.any(to_f64(got[k]))}
            seen.append((a, d, got))
    if not held or held == set(outputs):
        return None
    for a, d, got in seen:  # the outputs it differentiates agree with the references, for every step
        fd = st.fd.jv(a, d)
        ref = _reference_tangents(st, a, d)
        if fd is None or not all(close(got[k], (ref[k] if ref is not None else fd.jv[k]), grad_tol(a.dtype))
                                 for k in outputs if k not in held):
            return None
    held_problems = [p for p in problems if p["k"] in held]
    if len(held_problems) != len(problems):
        return None
    want = [p["ref"] if p["ref"] is not None else p["fd"] for p in held_problems]
    return held_problems[0] if all(np.any(to_f64(w)) for w in want) else None


def _cache_reading(st: GradState, problems: list[dict]) -> tuple[Arg, Arg] | None:
    """(source, cache) when the rule differentiates through an argument the function never reads (`source`: autodiff
    and finite differences of the function are exactly zero for a step in it, the rule's tangent is not) and gives
    no tangent for one it does read (`cache`): the rule treats `cache` as computed from `source` by every caller (a
    factorisation or pseudo-inverse cached next to its matrix), an argument the function takes only to carry that
    derivative. Drawn independently, the two cannot agree: no verdict is possible on such inputs."""
    sources = [p["arg"] for p in problems if p["ref"] is not None and not np.any(to_f64(p["ref"]))
               and not np.any(to_f64(p["fd"])) and np.any(to_f64(p["got"]))]
    caches = [p["arg"] for p in problems if p["ref"] is not None and np.any(to_f64(p["ref"]))
              and p["arg"] not in sources and _ignores(st, p["arg"])]
    return (sources[0], caches[0]) if sources and caches else None


def _nonfinite_finding(st: GradState, p: dict) -> Finding:
    fun, rule = names(st)
    a, name, nf = p["arg"], st.out_names[p["k"]], p["nonfinite"]
    reference = f"autodiff of {fun}" if p["ref"] is not None else f"{st.fd.describe(a, p['d'])} of {fun}"
    want = p["ref"] if p["ref"] is not None else p["fd"]
    details = (f"the tangent of {name} for a step in {a.name} has {nf.rule_only} NaN/inf of {nf.size} entries (e.g. "
               f"index {nf.rule_index}: {rule} gives {value_at(p['got'], nf.rule_index)}, {reference} gives "
               f"{value_at(want, nf.rule_index)})")
    loc = rule_location(st, a) if st.kind == "primitive" else rule_location(st)
    return rules.DERIVATIVE_NONFINITE.finding(
        owner=rule, derivative="tangent", reference=reference, details=details,
        consequence="jax.jvp and jax.grad return these NaNs without any error",
        fix=f"Make {rule} finite wherever {fun} is differentiable: a zero (or symbolic-zero) tangent must not be "
            "multiplied by an infinite partial derivative (`0 * inf = NaN`); keep symbolic zeros symbolic or mask "
            "the factor with `jnp.where`.",
        location=loc)


def _stated_constant(st: GradState, arg: Any) -> bool:
    from ..._core._documented import states_no_gradient

    return states_no_gradient([rule_location(st), locate(st.fun)], arg.name) is not None


def _reference_finding(st: GradState, problems: list[dict]) -> Finding | None:
    """The finding for tangents that disagree with the references; None for a sampled function's rule that is an
    unbiased estimator (`_gradref._expectation`): its disagreement at one key is the estimator's noise."""
    nonfinite = [p for p in problems if p.get("nonfinite") is not None]
    if nonfinite:
        return _nonfinite_finding(st, nonfinite[0])
    fun, rule = names(st)
    ignored = _ignored_argument(st, problems)
    if ignored is not None and _stated_constant(st, ignored["arg"]):
        return None  # its documentation says so ("`scale` is treated as a constant"): the zero is what it means
    if ignored is not None:  # a primitive's rule as a custom_jvp's: the argument may be a constant on purpose
        st.memo.second_order_held = {p["arg"].pos for p in problems}
        loc = rule_location(st, ignored["arg"]) if st.kind == "primitive" else rule_location(st)
        reference = f"autodiff of {fun}" if ignored["ref"] is not None else "float64 finite differences"
        want = ignored["ref"] if ignored["ref"] is not None else ignored["fd"]
        return rules.JVP_IGNORES_ARGUMENT.finding(
            rule=rule, name=ignored["arg"].name, out_name=st.out_names[ignored["k"]], function=fun,
            reference=reference, want=fmt_values(want), where=f" ({loc})" if loc else "",
            explicit="" if st.kind == "primitive" else "move it to nondiff_argnums, or ", location=loc)
    constant = _constant_output(st, problems)
    if constant is not None:  # an auxiliary output (residuals, statistics) the rule does not differentiate
        loc = rule_location(st, constant["arg"]) if st.kind == "primitive" else rule_location(st)
        want = constant["ref"] if constant["ref"] is not None else constant["fd"]
        return rules.JVP_CONSTANT_OUTPUT.finding(
            rule=rule, out_name=st.out_names[constant["k"]], function=fun, name=constant["arg"].name,
            reference=f"autodiff of {fun}" if constant["ref"] is not None else "float64 finite differences",
            want=fmt_values(want), where=f" ({loc})" if loc else "", location=loc)
    details = []
    for p in problems[:3]:
        a, name = p["arg"], st.out_names[p["k"]]
        text = (f"tangent of {name} for a step in {a.name}: the rule gives {fmt_values(p['got'])}, "
                f"{st.fd.describe(a, p['d'])} give {fmt_values(p['fd'])} ({p['cmp'].describe()})")
        if p["ref"] is not None:
            text += f", autodiff of {fun} gives {fmt_values(p['ref'])}"
        details.append(text)
    if st.kind == "primitive":
        loc = rule_location(st, problems[0]["arg"])
        flat = _flat_impl(st, problems)
        if flat is not None:  # an event or rounding kernel's surrogate: its impl does not move at all there
            return rules.FLAT_PRIMAL_SURROGATE.finding(
                owner=rule, derivative="tangent", name=flat["arg"].name, got=fmt_values(flat["got"]), function=fun,
                reference=f"{st.fd.describe(flat['arg'], flat['d'])} of {fun}'s impl, at every step,",
                where=f" ({loc})" if loc else "", location=loc)
        return rules.JVP_MISMATCH.finding(
            rule=rule,
            fun=fun,
            details="; ".join(details),
            modes="jax.grad and jax.jvp",
            name=problems[0]['arg'].name,
            location=loc)
    loc = rule_location(st)
    where = f" ({loc})" if loc else ""
    correction = f"fix the tangent formula (compare with jax.jvp({fun}.fun, ...))"
    conj = [p["arg"].name for p in problems if p["ref"] is not None and conjugated(p["got"], p["ref"], p["arg"].dtype)]
    if conj:
        details.append(f"the tangent is exactly the complex conjugate of autodiff's (a step in "
                       f"{', '.join(dict.fromkeys(conj))})")
        correction = ("conjugate the tangent: a `jnp.conj` is missing (or one too many); a holomorphic f has tangent "
                      "`f'(z) * t`, unconjugated")
    cached = _cache_reading(st, problems)
    if cached is not None:
        source, cache = cached
        st.memo.second_order_moot = (f"the first-order derivative cannot be judged with {cache.name} drawn apart "
                                     f"from {source.name}")
        raise SkipCheck(
            f"{rule} differentiates through {source.name}, which {fun} never reads, and gives {cache.name} no "
            f"tangent, which {fun} does read: it treats {cache.name} as computed from {source.name} by its callers (a "
            f"cached factorisation), and on independent draws of the two its tangent cannot match; declare inputs "
            f"where {cache.name} is computed from {source.name} ([tool.jaxdiag.targets] `args`, or `jaxdiag record`) "
            "to check it", note=True, location=loc)
    deliberate = all(_deliberate(st, p) for p in problems)
    factor = None
    if not deliberate:
        flat = _flat_primal(problems)  # not a surrogate JXG014 explains (straight-through, clip), yet by construction
        if flat is not None:
            return rules.FLAT_PRIMAL_SURROGATE.finding(
                owner=rule, derivative="tangent", name=flat["arg"].name, got=fmt_values(flat["got"]), function=fun,
                reference=f"autodiff of {fun}", where=where, location=loc)
        factor = next((c for p in problems if (c := _uniform_scale(st, p)) is not None), None)
        if factor is not None:
            details.append(f"along every direction the rule's tangent is the reference times {factor:.4g}: a uniformly "
                           "scaled derivative, which no clipping produces")
    if factor is None and sampled_estimate(st) and _flat_primal(problems) is None:
        # a sampled function's rule may be an estimator: judged in expectation over keys where that is possible
        judged = [(f"tangent of {st.out_names[p['k']]} for a step in {p['arg'].name}",
                   tangent_in_expectation(st, p["arg"], p["k"]))
                  for p in {(p["arg"].pos, p["k"]): p for p in problems}.values()]
        biased = first_biased(judged)
        if biased is None and all_unbiased(judged):
            return None
        if biased is not None:
            details.append(biased[1].describe(biased[0], fun))
            deliberate = False
        elif not deliberate:  # no verdict over keys: the estimator reading is stated, as a warning
            return rules.CUSTOM_DERIVATIVE_MISMATCH.finding(
                owner=rule, derivative="tangent", function=fun, details="; ".join(details + [sampled_estimate(st)]),
                consequence="jax.grad and jax.jvp are silently wrong", where=where, correction=correction,
                location=loc)
    if not deliberate:
        return rules.CUSTOM_DERIVATIVE_WRONG.finding(
            owner=rule, derivative="tangent", function=fun, details="; ".join(details),
            consequence="jax.grad and jax.jvp are silently wrong",
            correction=correction, location=loc)
    return rules.CUSTOM_DERIVATIVE_MISMATCH.finding(
        owner=rule, derivative="tangent", function=fun, details="; ".join(details),
        consequence="jax.grad and jax.jvp are silently wrong", where=where,
        correction=correction, location=loc)


# ---------------------------------------------------------------------------------------------------------------
# Symbolic zeros (custom_jvp symbolic_zeros=True, primitive ad.Zero)
# ---------------------------------------------------------------------------------------------------------------


# Reads the tangent outputs the earlier JVP checks computed (the symbolic-zero sets jvp-linearity ran compiled):
# after them, so their findings come first and a symbolic-zero failure never blocks them.
@check("jvp-symbolic-zeros", family="grad", kinds=KINDS, reads=("grad.blocked.jvp-rule-output", "grad.jvp_tangents"),
       provides=("grad.blocked.jvp-symbolic-zeros", "grad.reported_errors"))
def jvp_symbolic_zeros(ctx: Context) -> Iterator[Finding]:
    """With one argument differentiated, JAX passes the others' tangents as symbolic zeros (JXG006)."""
    st = state(ctx)
    require(st, (rules.MISSING_JVP_RULE, rules.DERIVATIVE_RULE_RAISED, rules.JVP_OUTPUT_STRUCTURE))
    if st.kind == "custom_jvp" and not st.symbolic_zeros:
        raise SkipCheck("defjvp without symbolic_zeros=True: JAX instantiates zero tangents")
    if not _symbolic_candidates(st):
        raise SkipCheck("a single argument: JAX never calls the rule with only zero tangents")
    st.out  # noqa: B018  (skips when the primal itself fails on the example, e.g. equinox's error_if raising)
    candidates = [a for a in st.dyn if not a.static] if st.kind == "custom_jvp" else st.args
    for a in _symbolic_candidates(st):
        if ("z", a.pos) in st.memo.jvp_tangents:
            continue  # ran in jvp-linearity's compiled call of the symbolic-zero sets
        _, exc = call_jvp(st, {a.pos: st.tangent(a, 0)}, symbolic=True)
        if exc is None:
            continue
        fun, rule = names(st)
        remember_error(st, exc)
        if removed_api(exc):  # e.g. the tutorial's `lax.zeros_like_array`: a removed API, not a zero-handling bug
            fns = [f for f in user_rules(st) if f is not None]
            where = (user_frame_location(exc, fns[0]) if fns else None) or rule_location(st)
            yield removed_api_finding(exc, f"{rule} (called with a symbolic-zero tangent)", where)
            return
        st.blocked[rules.SYMBOLIC_ZERO_UNHANDLED] = "the JVP rule fails on symbolic zeros"
        zero = "jax.custom_derivatives.SymbolicZero" if st.kind == "custom_jvp" else "ad.Zero"
        others = ", ".join(b.name for b in candidates if b is not a)
        yield rules.SYMBOLIC_ZERO_UNHANDLED.finding(
            evidence=f"{rule} raised {error_text(exc, user_rules(st)[0] if user_rules(st) else None)} when only "
                     f"{a.name} is "
            f"differentiated: the tangents of {others} then arrive as symbolic zeros ({zero}), e.g. under "
            f"jax.grad(f, argnums={a.pos}).",
            fix=f"In {rule}, test `type(t) is {zero}` before using a tangent"
                 + (" or use `ad.instantiate_zeros(t)`." if st.kind == "primitive" else "."),
            location=rule_location(st))
        return


def remember_error(st: GradState, exc: BaseException) -> None:
    """Errors already explained by a finding: JAX re-raising them later in reverse mode is not a new finding."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    st.memo.reported_errors.add(first)


# ---------------------------------------------------------------------------------------------------------------
# Reverse mode of a custom_jvp
# ---------------------------------------------------------------------------------------------------------------


@check("jvp-reverse", family="grad", kinds={"custom_jvp"}, reads=JVP_BLOCKERS,
       provides=("grad.second_order_moot", "grad.reverse_nonfinite"))
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
            evidence=f"jax.jvp of {fun} works but reverse mode fails: jax.vjp/jax.grad raised "
                     f"{error_text(exc, st.jvp_rule)}. "
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
    if np.isfinite(fwd) and not np.isfinite(rev):
        finding = reverse_nonfinite(st, list(cts), "at these inputs")
        if finding is not None:
            st.memo.second_order_moot = f"the first-order derivative is already wrong ({finding.code})"
            st.memo.reverse_nonfinite = True
            yield finding
            return
    # below the rounding floor both sides are zero to the output's precision (a derivative computed by cancellation)
    rounding = rounding_floor(st) * sum(float(np.sum(np.abs(to_f64(w)))) for w in ws if not is_float0(w))
    if abs(fwd - rev) > tol * (scale + 1e-30) + rounding:  # a NaN forward mode is jvp-reference's to report
        yield rules.JVP_NOT_LINEAR.finding(
            evidence=f"Forward and reverse mode of {fun} disagree: <w, J v> = {fwd:.6g} with jax.jvp but <J^T w, v> = "
            f"{rev:.6g} with jax.vjp (tolerance {tol:.0e}); the tangent computation in {rule} is not a linear map "
            "that JAX can transpose consistently.",
            fix=f"Make {rule}'s tangent output linear in the tangents.",
            location=rule_location(st))
