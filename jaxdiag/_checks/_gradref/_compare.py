"""Comparing a derivative with the references: dot-product tests `<w, J v> == <VJP(w), v>` against finite
differences (`vjp_against_fd`, `DotCheck`) and the gradient comparison `compare_grad`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._loading._numerics import Comparison, compare
from ._state import Arg, GradState
from ._values import N_DIRECTIONS, absdot, close_scalar, dot, grad_tol, is_float0, is_zero, to_f64

# ---------------------------------------------------------------------------------------------------------------
# Comparing a derivative with the references
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class DotCheck:
    """`<got, v>` against `<w, J v>` from finite differences, for one direction of one argument (or of all of
    them at once when `arg` is None)."""

    arg: Arg | None
    d: int
    got: float
    expected: float
    scale: float
    tol: float
    ok: bool

    def covers(self, arg: Arg) -> bool:
        return self.arg is None or self.arg is arg


def _dot_check(st: GradState, ws: Sequence[Any], got: dict[int, Any], args: Sequence[Arg], d: int,
               label: Arg | None) -> DotCheck | None:
    fd = st.fd.along(tuple(args), d)
    if fd is None:
        return None
    live = [(w, jv) for w, jv in zip(ws, fd.jv) if not is_float0(w)]
    expected = sum(dot(w, jv) for w, jv in live)
    actual = sum(dot(got.get(a.pos), st.direction(a, d)) for a in args if not is_zero(got.get(a.pos)))
    scale = max(sum(absdot(got.get(a.pos), st.direction(a, d)) for a in args if not is_zero(got.get(a.pos))),
                sum(absdot(w, jv) for w, jv in live))
    noise = fd.noise * sum(float(np.sum(np.abs(to_f64(w)))) for w, _ in live)  # the difference's own error
    scale += noise
    tol = max(grad_tol(a.dtype) for a in args)
    # a disagreement within the finite difference's rounding error is no evidence: in the inputs' precision (where
    # float64 computes another branch) a derivative near zero is differenced as noise of that size
    ok = close_scalar(actual, expected, scale, tol) or abs(actual - expected) <= noise
    return DotCheck(label, d, actual, expected, scale, tol, ok)


def vjp_against_fd(st: GradState, ws: Sequence[Any], got: dict[int, Any], args: Sequence[Arg] | None = None
                   ) -> list[DotCheck]:
    """Dot-product test of a VJP result `got` (arg position -> cotangent) against finite differences:
    `sum_i <got_i, v_i> == <w, J v>` along joint directions; where that fails (or for `args`), per argument
    `<got_i, v_i> == <w, J_i v_i>` to say which one is wrong. Non-finite points are skipped."""
    if args is None and len(st.diff) > 1:
        joint = [c for d in range(N_DIRECTIONS) if (c := _dot_check(st, ws, got, st.diff, d, None)) is not None]
        if joint and all(c.ok for c in joint):
            return joint
    return [c for arg in (args if args is not None else st.diff) for d in range(N_DIRECTIONS)
            if (c := _dot_check(st, ws, got, [arg], d, arg)) is not None]


def nan_at_a_zero_output(st: GradState, c: DotCheck) -> bool:
    """A NaN `<grad, v>` (finite differences finite) where some output entry is exactly 0 at the example and its
    difference along the step is 0 up to rounding: the NaN is JAX's derivative of a norm or square root at 0 (the
    chain rule's 0/0), not a rule's."""
    if np.isfinite(c.got):
        return False
    fd = st.fd.along((c.arg,) if c.arg is not None else tuple(st.diff), c.d)
    if fd is None:
        return False
    flat = 100 * fd.noise  # the difference's rounding level
    return any(np.any((to_f64(out) == 0) & (np.abs(jv) <= flat)) for out, jv in zip(st.out_leaves, fd.jv)
               if np.shape(out) == np.shape(jv))


def compare_grad(actual: Any, expected: Any, dtype: Any) -> Comparison:
    return compare(to_f64(actual) if actual is not None else np.zeros(np.shape(expected)), to_f64(expected),
                   tol=grad_tol(dtype))


def fd_reference_nonzero(st: GradState, ws: Sequence[Any], args: Sequence[Arg] | None = None) -> bool:
    """True when `<w, J v>` from finite differences is clearly nonzero for some argument and direction."""
    groups = [tuple(args)] if args is not None else [tuple(st.diff)]
    for group in groups:
        for d in range(N_DIRECTIONS):
            fd = st.fd.along(group, d)
            if fd is None:
                continue
            value = sum(dot(w, jv) for w, jv in zip(ws, fd.jv) if not is_float0(w))
            scale = sum(absdot(w, jv) for w, jv in zip(ws, fd.jv) if not is_float0(w))
            noise = fd.noise * sum(float(np.sum(np.abs(to_f64(w)))) for w in ws if not is_float0(w))
            if abs(value) > 10 * max(grad_tol(a.dtype) for a in group) * (noise + 1e-30) and scale > noise * 100:
                return True
    return False


def material_dependence(st: GradState, ws: Sequence[Any], args: Sequence[Arg] | None = None) -> bool:
    """True when `<w, J v>` from finite differences exceeds the gradient comparison's own tolerance, relative to
    |w| |v|, along some direction of `args` (default: all differentiable arguments together): zeros in place of a
    smaller VJP would pass the comparison of the gradient itself (a converged solver's residual output moves by 1e-10
    when its input moves by 1)."""
    group = tuple(st.diff if args is None else args)
    tol = max((grad_tol(a.dtype) for a in group), default=0.0)
    w_norm = float(np.sqrt(sum(float(np.sum(np.abs(to_f64(w)) ** 2)) for w in ws if not is_float0(w))))
    for d in range(N_DIRECTIONS):
        fd = st.fd.along(group, d)
        if fd is None:
            continue
        value = sum(dot(w, jv) for w, jv in zip(ws, fd.jv) if not is_float0(w))
        v_norm = float(np.sqrt(sum(float(np.sum(np.abs(st.direction(a, d)) ** 2)) for a in group)))
        if abs(value) > tol * w_norm * v_norm:
            return True
    return False


# ---------------------------------------------------------------------------------------------------------------
# Grading a custom derivative that disagrees with the reference (JXG014 warning vs JXG024 error)
# ---------------------------------------------------------------------------------------------------------------


def sampled_estimate(st: GradState) -> str:
    """A clause for the JXG014 details when the subject draws from a PRNG key it takes (`key[]` among its inputs):
    its primal is a Monte-Carlo quantity, and a custom derivative of one is often an estimator (a perturbation or
    score-function gradient), equal to the derivative only in expectation. "" otherwise."""
    keys = [i for i, spec in enumerate(st.subject.specs) if getattr(spec, "key", None) is not None]
    if not keys:
        return ""
    return ("the function takes a PRNG key and samples with it, so its rule may be a Monte-Carlo estimator (a "
            "perturbation or score-function gradient), which equals the derivative of the sampled value only in "
            "expectation")


def deliberate_disagreement(got: Any, ref: Any, passed: Any, dtype: Any) -> bool:
    """True when a custom derivative `got` differs from the reference `ref` (the derivative of the primal, the same
    shape) only in ways a deliberate surrogate does, element by element:

    - zeroed: `got` is 0 where `ref` is not (stop-gradient, a clipped region);
    - clipped: `got` has `ref`'s sign and a smaller magnitude, and keeps the order of the magnitudes (elementwise,
      norm or soft gradient clipping: a larger derivative is never clipped below a smaller one);
    - identity-replaced: `got` equals `passed`, the cotangent/tangent the rule received (straight-through).

    Any other differing element (opposite sign, larger magnitude than the derivative, another value, or a smaller
    magnitude that reverses the order, as `sigmoid(-x)` written for `sigmoid(x)` does) is on the interior of the
    domain, where the primal is smooth and no surrogate explains it: the derivative is wrong. `passed` is None where
    the identity cannot apply (shapes differ)."""
    if got is None:
        return True
    g, r = to_f64(got), to_f64(ref)
    if g.shape != r.shape:
        return False
    tol = grad_tol(dtype)
    slack = tol * (1.0 + np.abs(r))
    with np.errstate(invalid="ignore"):
        differ = (np.abs(g - r) > slack) & np.isfinite(g) & np.isfinite(r)
        zeroed = np.abs(g) <= slack
        # same direction (for complex values: the same phase) and no larger than the derivative
        same_direction = np.real(g * np.conj(r)) >= (1.0 - tol) * np.abs(g) * np.abs(r)
        bounded = same_direction & (np.abs(g) <= np.abs(r) + slack)
        identity = np.zeros_like(differ)
        if passed is not None and np.shape(passed) == g.shape:
            p = to_f64(passed)
            identity = np.abs(g - p) <= tol * (1.0 + np.abs(p))
    surrogate = differ & (zeroed | identity)
    if np.any(differ & bounded & ~surrogate) and not _keeps_order(g, r, passed, slack, ~surrogate):
        bounded = np.zeros_like(bounded)
    explained = zeroed | bounded | identity
    return bool(np.all(explained | ~differ))


def _keeps_order(g: np.ndarray, r: np.ndarray, passed: Any, slack: np.ndarray, keep: np.ndarray) -> bool:
    """Whether the custom derivative's magnitudes never decrease as the reference's grow, over the entries `keep`:
    as values (a clip of the cotangent or tangent, a norm clip, a soft clip) or as factors of the tangent/cotangent
    received (a clip of the derivative itself, `min(f'(x), M) * t`). A clip is monotone in one of the two."""
    if _monotone(np.abs(g[keep]), np.abs(r[keep]), slack[keep]):
        return True
    if passed is None or np.shape(passed) != g.shape:
        return False
    p = np.abs(to_f64(passed))
    usable = keep & (p > 0) & np.isfinite(p)
    return bool(_monotone(np.abs(g[usable]) / p[usable], np.abs(r[usable]) / p[usable], slack[usable] / p[usable]))


def _monotone(got: np.ndarray, ref: np.ndarray, slack: np.ndarray) -> bool:
    """No entry's `got` is above another's by more than the slack where its `ref` is below it by more."""
    finite = np.isfinite(got) & np.isfinite(ref)
    got, ref, slack = got[finite], ref[finite], slack[finite]
    if got.size < 2:
        return True
    order = np.argsort(ref, kind="stable")
    got, ref, slack = got[order], ref[order], slack[order]
    running = np.maximum.accumulate(got)
    below = np.searchsorted(ref, ref - slack, side="left")  # entries [0, below) have ref smaller by more than slack
    has_below = below > 0
    highest_below = running[np.maximum(below - 1, 0)]
    return bool(np.all(~has_below | (highest_below <= got + slack)))


def passed_through(got: Any, passed: Any, dtype: Any) -> bool:
    """Whether the custom derivative `got` is the cotangent/tangent `passed` the rule received, unchanged at every
    entry: a straight-through estimator. Its ratio to the reference is constant wherever the primal is linear with a
    constant slope (a dequantisation `q * scale`), which is no scaled-derivative bug."""
    if got is None or passed is None or np.shape(got) != np.shape(passed):
        return False
    g, p = to_f64(got), to_f64(passed)
    return bool(np.all(np.abs(g - p) <= grad_tol(dtype) * (1.0 + np.abs(p))))


def uniform_ratio(got: Any, ref: Any, dtype: Any) -> float | None:
    """The one real factor `c` with `got == c * ref` at every entry where the reference is clearly nonzero (at
    least 1% of its largest magnitude), or None when the ratio varies from entry to entry (clipping bounds only the
    entries past a threshold) or nothing is nonzero."""
    if got is None or ref is None:
        return None
    g, r = to_f64(got), to_f64(ref)
    if g.shape != r.shape or not np.all(np.isfinite(g)) or not np.all(np.isfinite(r)):
        return None
    mag = np.abs(r)
    big = mag >= 1e-2 * float(np.max(mag, initial=0.0))
    if not np.any(big) or float(np.max(mag, initial=0.0)) == 0.0:
        return None
    ratio = np.real(g[big] * np.conj(r[big])) / mag[big] ** 2
    if np.iscomplexobj(g) and np.any(np.abs(np.imag(g[big] * np.conj(r[big]))) > 2 * grad_tol(dtype) * mag[big] ** 2):
        return None  # a phase, not a real factor
    c = float(np.median(ratio))
    if np.all(np.abs(ratio - c) <= 2 * grad_tol(dtype) * max(abs(c), 1e-3)):
        return c
    return None


def constant_factor(pairs: Sequence[tuple[Any, Any]], dtype: Any) -> float | None:
    """`c` when every (got, reference) pair, taken along different directions or at different points, is the
    reference times the same factor `c` (neither 0 nor 1): a uniformly scaled derivative (`2 x^2` for `3 x^2`, a
    10x slope), which no clipping produces (clipping scales only what exceeds a threshold, so its ratio changes with
    the direction's magnitude). Needs at least two pairs: one direction alone cannot tell a scale from a norm clip."""
    if len(pairs) < 2:
        return None
    ratios = [uniform_ratio(g, r, dtype) for g, r in pairs]
    if any(c is None for c in ratios):
        return None
    c0 = ratios[0]
    assert c0 is not None
    tol = 2 * grad_tol(dtype)
    if abs(c0) <= tol or abs(c0 - 1.0) <= tol:
        return None
    if all(abs(c - c0) <= tol * abs(c0) for c in ratios if c is not None):
        return c0
    return None


def conjugated(got: Any, ref: Any, dtype: Any) -> bool:
    """True when a complex `got` is the complex conjugate of the reference `ref` (and not `ref` itself): a `jnp.conj`
    missing from a rule, or one too many."""
    if got is None or ref is None or np.dtype(dtype).kind != "c":
        return False
    g, r = to_f64(got), to_f64(ref)
    if g.shape != r.shape or not np.any(np.abs(np.imag(r)) > grad_tol(dtype) * (1.0 + np.abs(r))):
        return False
    return compare(np.conj(g), r, tol=grad_tol(dtype)).ok and not compare(g, r, tol=grad_tol(dtype)).ok
