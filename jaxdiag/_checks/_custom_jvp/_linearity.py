"""Check jvp-linearity: the tangent map is additive, homogeneous and zero to zero (JXG020), and the eager
reverse mode (`eager_vjp`, `pullback_at_first_cotangent`) used to say why grad fails or is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import jax
import numpy as np

from ... import _rules as rules
from ..._core._report import Finding
from .._base import Context, SkipCheck, check
from .._gradref import (
    NOT_COMPUTED, N_DIRECTIONS, GradState, device_zeros, dot, fmt_values, grad_tol, host_linear, is_float0,
    is_inexact, quiet_call, require, short_message, state,
)
from ._call import KINDS, T, T_many, _symbolic_candidates, joint, names, rule_location

# ---------------------------------------------------------------------------------------------------------------
# jvp-linearity
# ---------------------------------------------------------------------------------------------------------------


def _violation(lhs: Sequence[np.ndarray], rhs: Sequence[np.ndarray], scale: float, tol: float,
               floor: float = 0.0) -> float | None:
    """The largest |lhs - rhs| when it exceeds `tol * scale` and the rounding `floor`, else None."""
    worst = max((float(np.max(np.abs(a - b))) if a.size else 0.0 for a, b in zip(lhs, rhs)), default=0.0)
    return worst if worst > tol * scale + floor + 1e-30 else None


# How many rounding units of the output's dtype a tangent computed from it can carry (`rounding_floor`).
_ROUNDING_UNITS = 64


def rounding_floor(st: GradState) -> float:
    """The size below which output tangents are rounding, not values: `_ROUNDING_UNITS` units of the output's dtype
    times the outputs' and the input tangents' magnitudes. A derivative that is exactly zero (an eigenvector that
    does not depend on the start vector) comes out of a JVP rule as float32 noise near 1e-7, which is neither
    additive nor homogeneous; a nonlinear tangent (`abs(t)`, `t ** 2`) differs at the tangents' own size."""
    outs = [np.asarray(p) for p in st.out_leaves if is_inexact(np.asarray(p).dtype)]
    if not outs:
        return 0.0
    eps = max(float(jax.numpy.finfo(o.dtype).eps) for o in outs)  # numpy < 2 has no finfo of bfloat16
    out = max(float(np.max(np.abs(o), initial=0.0)) for o in outs)
    if out == 0.0:  # an output exactly zero at this point (the log of a matrix whose eigenvalues are all positive
        # reals, under a projection onto its skew part): the tangent's rounding follows the inputs it is computed from
        out = max((float(np.max(np.abs(np.asarray(a.value)), initial=0.0)) for a in st.diff), default=0.0)
    tangent = max((float(np.max(np.abs(np.asarray(st.tangent(a, d))), initial=0.0)) for a in st.diff
                   for d in (0, 1)), default=0.0)
    return _ROUNDING_UNITS * eps * out * tangent


# Homogeneity is tested with a negative, non-unit scale: abs(t) is positively homogeneous and would pass with 2.
SCALE = -1.5


@check("jvp-linearity", family="grad", kinds=KINDS, reads=("grad.blocked.jvp-rule-output",),
       provides=("grad.blocked.jvp-linearity", "grad.jvp_tangents"))
def jvp_linearity(ctx: Context) -> Iterator[Finding]:
    """Additivity, homogeneity and zero-in-zero-out of the tangent map (JXG020)."""
    st = state(ctx)
    require(st)
    if not st.diff or N_DIRECTIONS < 2:
        raise SkipCheck("no floating-point argument to differentiate")
    both = {a.pos: host_linear(a.dtype, (1.0, st.tangent(a, 0)), (1.0, st.tangent(a, 1))) for a in st.diff}
    symbolic = [(("z", a.pos), {a.pos: st.tangent(a, 0)}) for a in _symbolic_candidates(st)]
    T_many(st, [(("j", 1), joint(st, 1)), (("j", "0+1"), both), (("j", "cx0"), joint(st, 0, SCALE)), *symbolic])
    t1, t2 = T(st, ("j", 0), joint(st, 0)), T(st, ("j", 1), joint(st, 1))
    t12 = T(st, ("j", "0+1"), both)
    tcx = T(st, ("j", "cx0"), joint(st, 0, SCALE))
    if t1 is None or t2 is None or t12 is None or tcx is None:
        raise SkipCheck("the JVP rule raised for some tangents (reported by jvp-rule-output)")
    tol = max(grad_tol(p.dtype) for p in st.out_leaves if is_inexact(p.dtype)) if any(
        is_inexact(p.dtype) for p in st.out_leaves) else 1e-3
    scale = max(float(np.max(np.abs(x), initial=0.0)) for x in (*t1, *t2))
    floor = rounding_floor(st)
    add = _violation(t12, [a + b for a, b in zip(t1, t2)], scale, tol, floor)
    hom = _violation(tcx, [SCALE * a for a in t1], scale, tol, floor)
    if add is None and hom is None:
        return  # an affine offset c breaks both (cT(v) gains cc, T(cv) only c), so zero -> zero holds too
    t0 = T(st, ("j", "zero"), {a.pos: device_zeros(a.shape, a.dtype) for a in st.diff}) or []
    zero = _violation(t0, [np.zeros_like(x) for x in t0], scale, tol, floor)
    st.blocked[rules.JVP_NOT_LINEAR] = "the tangent map is not linear"
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
        evidence=f"{rule}'s tangent output is not linear in the input tangents: "
                 f"" + "; ".join(observed) + ". " + consequence,
        fix=f"Make every tangent term in {rule} linear in the tangents: multiply them by primal-only factors "
            "(`cos(x) * t`, not `t ** 2`, `abs(t)`, `t * t2` or `+ 1.0`).",
        location=rule_location(st))


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
    """jax.vjp of the subject itself (through JAX's machinery) at the example: (fn, None) where fn(ws) ->
    cotangents per differentiable argument (None if the pullback raised), or (None, exc). Eagerly, except where one
    compiled program of the VJP and its pullback runs (`_compiled_vjp`); any failure there is left to the eager
    calls, whose errors are the ones reported."""
    if st.memo.eager_vjp is NOT_COMPUTED:
        st.memo.eager_vjp = _compiled_vjp(st) or _eager_vjp(st)
    return st.memo.eager_vjp


def _eager_vjp(st: GradState) -> tuple[Any, BaseException | None]:
    res, exc = quiet_call(jax.vjp, st.diff_fn(st.call_target), *st.diff_values)
    if exc is not None:
        return None, exc
    pullback = res[1]

    def apply(ws: Sequence[Any]) -> list[np.ndarray] | None:
        if id(ws) not in st.memo.eager_cotangents:
            _remember(st, ws, *quiet_call(pullback, jax.tree_util.tree_unflatten(st.out_treedef, list(ws))))
        return st.memo.eager_cotangents[id(ws)]

    return apply, None


def _remember(st: GradState, ws: Sequence[Any], out: Any, err: BaseException | None) -> None:
    """The VJP's cotangents at `ws` (NumPy arrays), or the error it raised there, in the state's memo."""
    st.memo.eager_cotangents[id(ws)] = None if err is not None else [np.asarray(o) for o in out]
    st.memo.eager_cotangent_errors[id(ws)] = err


def _compiled_vjp(st: GradState) -> tuple[Any, None] | None:
    """`eager_vjp` through one compiled program of the VJP and its pullback (`st.gradient`) where the subject loops
    or branches: eagerly, jax.vjp of an adaptive quadrature compiled its loops again op by op (about 100 programs,
    8 s, and as many in the pullback). It computes what the eager calls compute (a user primitive at the top level
    runs its impl). None where that program does not run at the first cotangent; a cotangent it does not run at
    later goes through the eager calls."""
    ran, out = st.gradient.compiled(st.diff_values)
    if not ran:
        return None
    _remember(st, st.cotangents(0), out, None)
    eager: list[tuple[Any, BaseException | None]] = []  # computed only for a cotangent the program fails on

    def apply(ws: Sequence[Any]) -> list[np.ndarray] | None:
        if id(ws) not in st.memo.eager_cotangents:
            ran, out = st.gradient.compiled(st.diff_values, ws)
            if ran:
                _remember(st, ws, out, None)
            else:
                eager[:] = eager or [_eager_vjp(st)]
                fallback, exc = eager[0]
                if fallback is not None:
                    return fallback(ws)
                _remember(st, ws, None, exc)
        return st.memo.eager_cotangents[id(ws)]

    return apply, None


def pullback_at_first_cotangent(st: GradState) -> tuple[Any, Any, BaseException | None]:
    """(ws, cotangents, error) of the subject's eager VJP at the first seeded output cotangent `ws`: cotangents per
    differentiable argument, or the error raised by jax.vjp or by the pullback."""
    vjp, exc = eager_vjp(st)
    ws = st.cotangents(0)
    cts = vjp(ws) if vjp is not None else None
    if exc is None and cts is None:
        exc = st.memo.eager_cotangent_errors.get(id(ws))
    return ws, cts, exc
