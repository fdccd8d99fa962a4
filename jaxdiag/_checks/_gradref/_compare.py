"""Comparing a derivative with the references: dot-product tests `<w, J v> == <VJP(w), v>` against finite
differences (`vjp_against_fd`, `DotCheck`) and the gradient comparison `compare_grad`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._numerics import Comparison, compare
from ._state import Arg, GradState
from ._values import (
    N_DIRECTIONS,
    absdot,
    close_scalar,
    dot,
    grad_tol,
    is_float0,
    is_zero,
    to_f64,
)

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
    scale += fd.noise * sum(float(np.sum(np.abs(to_f64(w)))) for w, _ in live)
    tol = max(grad_tol(a.dtype) for a in args)
    return DotCheck(label, d, actual, expected, scale, tol, close_scalar(actual, expected, scale, tol))


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


# ---------------------------------------------------------------------------------------------------------------
# Grading a custom derivative that disagrees with the reference (JXG014 warning vs JXG024 error)
# ---------------------------------------------------------------------------------------------------------------


def deliberate_disagreement(got: Any, ref: Any, passed: Any, dtype: Any) -> bool:
    """True when a custom derivative `got` differs from the reference `ref` (the derivative of the primal, the same
    shape) only in ways a deliberate surrogate does, element by element:

    - zeroed: `got` is 0 where `ref` is not (stop-gradient, a clipped region);
    - bounded: `got` has `ref`'s sign and a smaller magnitude (elementwise or norm gradient clipping);
    - identity-replaced: `got` equals `passed`, the cotangent/tangent the rule received (straight-through).

    Any other differing element (opposite sign, larger magnitude than the derivative, another value) is on the
    interior of the domain, where the primal is smooth and no surrogate explains it: the derivative is wrong.
    `passed` is None where the identity cannot apply (shapes differ)."""
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
    explained = zeroed | bounded | identity
    return bool(np.all(explained | ~differ))
