"""Examples on a kink: where the primal has no derivative along a step at the example itself (a ReLU at 0, |x| at 0,
a clip at its bound, the tie of a max), its one-sided differences disagree however short the step, and any value
between them is a rule's legitimate choice: JAX's own `maximum` takes their mean, `where(x > 0, t, 0)` one side.
Recorded and documented inputs sit there often (spikes of 0 and 1, a padded zero), random draws never. A rule's
derivative that differs from the references there is judged again beside the kink, at x + delta v and x - delta v
on the same line, where both sides are smooth: a rule that is wrong on either side is still reported, one that is
right on both has only chosen its value at the kink."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ... import _compat
from ._values import grad_tol, quiet_call, to_f64

if TYPE_CHECKING:  # only annotations: `_state` imports this package
    from ._state import Arg, GradState

# The one-sided differences of a smooth function differ by O(h): halving the step halves their gap. At a kink the
# gap stays, at a jump it doubles: an entry whose gap shrinks by less than this factor when the step halves has no
# derivative at the point.
SMOOTH_SHRINK = 0.75

# How far beside the kink the rule is judged (times the direction, itself scaled to max(1, |x|)): far enough that
# the finite differences there (steps of a quarter of it) stay on one side, near enough to stay off other kinks.
BESIDE = 1e-2


def rough_entries(center: np.ndarray, coarse: tuple[np.ndarray, np.ndarray], fine: tuple[np.ndarray, np.ndarray],
                  step: float, floor: Any, per_gap: float = 0.0) -> np.ndarray:
    """Per entry of a function's value at x: True where its one-sided differences along a step disagree by more
    than `floor` (plus `per_gap` times their gap at the longer step) and their gap does not shrink with the step
    (`SMOOTH_SHRINK`): a kink or a jump at x itself. `coarse`/`fine`: its values at x + s v and x - s v for
    s = `step` and `step` / 2."""
    def gap(pair: tuple[np.ndarray, np.ndarray], h: float) -> np.ndarray:
        plus, minus = pair
        return np.abs(plus + minus - 2 * center) / h

    with np.errstate(invalid="ignore", over="ignore"):
        wide, narrow = gap(coarse, step), gap(fine, step / 2)
        return (narrow > floor + per_gap * wide) & (narrow >= SMOOTH_SHRINK * wide)


def kink_at_point(st: GradState, args: Sequence[Arg], d: int, leaves: Sequence[int]) -> bool:
    """Whether some entry of the primal's output leaves `leaves` has a kink or a jump at the example along
    direction `d` of `args` (`rough_entries`, beyond the tolerance relative to the gap)."""
    step = BESIDE / 4
    center = st.fd.at({})
    if center is None:
        return False
    pairs = []
    for h in (step, step / 2):
        plus = st.fd.at({a.pos: h * st.direction(a, d) for a in args})
        minus = st.fd.at({a.pos: -h * st.direction(a, d) for a in args})
        if plus is None or minus is None:
            return False
        pairs.append((plus, minus))
    tol = max(grad_tol(a.dtype) for a in args)
    (plus, minus), (plus2, minus2) = pairs
    return any(np.any(rough_entries(center[k], (plus[k], minus[k]), (plus2[k], minus2[k]), step, tol, tol))
               for k in leaves)


def right_beside_kink(st: GradState, args: Sequence[Arg], d: int,
                      agrees_at: Callable[[dict[int, np.ndarray]], bool]) -> bool:
    """Whether the rule agrees with its reference on both sides of a kink at the example along direction `d` of
    `args`: `agrees_at(moved)` judges it with the arguments at `moved` (position -> float64 values, already
    rounded to their dtypes). False where that fails."""
    for side in (1.0, -1.0):
        # rounded to each argument's dtype, so the rule and the references see the same point
        moved = {a.pos: to_f64(np.asarray(to_f64(a.value) + side * BESIDE * st.direction(a, d)).astype(a.dtype))
                 for a in args}
        ok, exc = quiet_call(agrees_at, moved)
        if exc is not None or not ok:
            return False
    return True


def central_at(st: GradState, args: Sequence[Arg], d: int, moved: dict[int, np.ndarray]
               ) -> list[np.ndarray] | None:
    """Richardson central differences of the primal along direction `d` of `args` with them at `moved`, at steps
    short enough (a quarter of `BESIDE` and half that) to stay on one side of a kink at the example."""
    offset = {a.pos: moved[a.pos] - to_f64(a.value) for a in args}
    quotients = []
    for step in (BESIDE / 4, BESIDE / 8):
        plus = st.fd.at({a.pos: offset[a.pos] + step * st.direction(a, d) for a in args})
        minus = st.fd.at({a.pos: offset[a.pos] - step * st.direction(a, d) for a in args})
        if plus is None or minus is None or not all(np.all(np.isfinite(x)) for x in plus + minus):
            return None
        quotients.append([(p - m) / (2 * step) for p, m in zip(plus, minus)])
    return [(4 * fine - coarse) / 3 for coarse, fine in zip(*quotients)]


def moved_values(st: GradState, moved: dict[int, np.ndarray]) -> list[Any]:
    """The example's positional values with the arguments at `moved` as device arrays of their own dtypes."""
    return st.values({p: _compat.device_array(v.astype(st.args[p].dtype)) for p, v in moved.items()})
