"""Finite differences: central differences of the primal along the seeded directions (`FiniteDifferences`,
`FDResult`), first in the inputs' own precision, escalated to float64 where that is inconclusive.

The native difference reuses the programs the primal already compiled; a float64 evaluation compiles every
operation of the primal again (a primal with loops or branches is one compiled program per precision instead,
`_compiled`). So each direction is first differenced in the inputs' precision, Richardson-
extrapolated from the steps h, h/2 and h/4, with an error bound per entry (`richardson`, docs/speed.md). It is
kept only where that bound is `NATIVE_MARGIN` times below the comparison tolerance relative to the entry itself;
anywhere else (an entry near zero, a function value large against its change over the step, a kink inside the step,
a non-finite point) the direction is differenced in float64 as before, and so is every stability test
(`stable`): a verdict near the threshold is always decided on float64 differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from ... import _compat
from ..._loading._numerics import FD_EPS
from ._compiled import CompiledPrimal
from ._values import EPS_F64, all_finite, close, grad_tol, is_float0, is_inexact, primal_tol, quiet_call, to_f64

if TYPE_CHECKING:  # only annotations: `_state` imports this module
    from ._state import Arg, GradState


# ---------------------------------------------------------------------------------------------------------------
# Finite differences
# ---------------------------------------------------------------------------------------------------------------


@dataclass
class FDResult:
    """`J v` for one direction, as float64 output leaves, and the step that gave it."""

    jv: list[np.ndarray]
    eps: float
    noise: float  # rough rounding-error bound of the entries (absolute)


_INCONSISTENT = object()

# The native step, in units of the dtype's FD_EPS (at most NATIVE_MAX_STEP): Richardson extrapolation removes the
# h^2 truncation error, so a longer step divides the rounding error of f by more.
NATIVE_STEP = 100.0
NATIVE_MAX_STEP = 0.1
# The native difference is used only where its error bound is this many times below the tolerance it is compared
# with: a comparison whose outcome such an error could change is then within 1/NATIVE_MARGIN of its threshold.
NATIVE_MARGIN = 4.0


def richardson(d: Sequence[np.ndarray], h: float, unit: float, f_abs: np.ndarray, x_max: float
               ) -> tuple[np.ndarray, np.ndarray]:
    """(value, error bound) per entry from central differences `d` = D(h), D(h/2), D(h/4) computed in a precision
    of unit roundoff `unit`. The value is R(h/2) = (4 D(h/4) - D(h/2)) / 3, whose truncation error is O(h^4); the
    bound adds three terms:
    - truncation: |R(h) - R(h/2)| / 15, the next Richardson correction (a kink inside the step makes it large);
    - rounding of f (cancellation: a value large against its change over the step): two ulps of each evaluated
      |f| per evaluation, divided by the step, through the Richardson weights: 12 unit |f| / h;
    - rounding of x +- s v to the input precision (half an ulp of each, about unit max|x + s v| / 2 for both),
      which changes the direction by that over the shortest step 2 h/4, relative, of the largest |D| (through the
      weights: 4/3 of it)."""
    d1, d2, d4 = d
    r1, r2 = (4 * d2 - d1) / 3, (4 * d4 - d2) / 3
    largest = float(np.max(np.abs(d4), initial=0.0))
    bound = np.abs(r1 - r2) / 15 + 12 * unit * f_abs / h + 4 / 3 * unit * (x_max + h) / (2 * h / 4) * largest
    return r2, bound


def below_64(x: Any) -> bool:
    dtype = np.dtype(getattr(x, "dtype", np.asarray(x).dtype))
    return is_inexact(dtype) and (dtype.kind == "c" and dtype.itemsize < 16 or dtype.kind != "c" and dtype.itemsize < 8)


class FiniteDifferences:
    """Central differences of the primal along seeded directions, evaluated in float64 where the primal runs in
    float64 (x64 scoped to the evaluation), in its own dtype otherwise. Non-finite points are dropped, never
    compared."""

    def __init__(self, st: GradState):
        self.st = st
        self.primal = CompiledPrimal(st.call_primal)  # every point through one program where that spares compiles
        self.cache: dict[tuple, FDResult | None] = {}
        self.low_precision = False
        self.native_keys: set[tuple] = set()  # the directions differenced in the inputs' precision
        self.mode = "f64" if self._float64_outputs() else "native"

    @staticmethod
    def x64() -> Any:
        """x64 only around float64 evaluations (user code sees float64 defaults only there); restored on exit."""
        return _compat.x64_scope(True)

    def _float64_outputs(self) -> bool:
        """Try float64 first wherever something is differentiable; `_consistent` falls back to the inputs' own
        precision when the float64 evaluation does not give float64 outputs of the same value."""
        return bool(self.st.diff)

    def _consistent(self, plus: list[np.ndarray], minus: list[np.ndarray]) -> bool:
        """(f(x+h) + f(x-h)) / 2 is f(x) up to O(h^2): the float64 evaluation computes the same function as the
        native one (not a different branch for float64)."""
        if len(plus) != len(self.st.out_leaves):
            return False
        for k, (p, m, native) in enumerate(zip(plus, minus, self.st.out_leaves)):
            if p.shape != tuple(np.shape(native)):
                return False
            middle = self.st.gauges.in_native_phase(k, (p + m) / 2)  # LAPACK's phases differ by precision
            if is_inexact(np.dtype(native.dtype)) and not close(middle, native, primal_tol(native.dtype) * 10):
                return False
        return True

    def _in_native_gauge(self, jv: list[np.ndarray], plus: list[np.ndarray], minus: list[np.ndarray]
                         ) -> list[np.ndarray]:
        """`jv` with each vector's difference in the phase the native evaluation picked (`_gauge`)."""
        return [self.st.gauges.in_native_phase(k, (p + m) / 2, t) for k, (t, p, m) in enumerate(zip(jv, plus, minus))]

    def _evaluate64(self, shifted: dict[int, np.ndarray]) -> list[np.ndarray] | None:
        with self.x64():
            values = []
            for a in self.st.args:
                if a.pos in shifted:
                    values.append(_compat.device_array(shifted[a.pos]))
                elif a.diff:
                    values.append(_compat.device_array(to_f64(a.value)))
                elif a.static:
                    values.append(a.value)
                else:
                    values.append(_compat.device_array(np.asarray(a.value)))
            fresh = any(below_64(a.value) for a in self.st.args if a.diff)  # escalated: f64 is new to the primal
            out, exc = quiet_call(self.primal, values, fresh)
            if exc is not None:
                return None
            leaves = jax.tree_util.tree_leaves(out)
            if any(below_64(x) for x in leaves):
                self.low_precision = True  # float64 inputs, lower-precision outputs: the primal casts down
            return [to_f64(x) if not is_float0(x) else np.zeros(np.shape(x)) for x in leaves]

    def _evaluate_native(self, shifted: dict[int, np.ndarray]) -> list[np.ndarray] | None:
        values = self.st.values({p: _compat.device_array(v.astype(self.st.args[p].dtype)) for p, v in shifted.items()})
        out, exc = quiet_call(self.primal, values)
        if exc is not None:
            return None
        return [to_f64(x) for x in jax.tree_util.tree_leaves(out)]

    def eps_for(self, args: Sequence[Arg]) -> float:
        if self.mode == "f64":
            return EPS_F64
        # the primal only runs in its own precision: the step per dtype of _numerics.FD_EPS (bf16 1e-1 ... f64 1e-5)
        return max(FD_EPS.get(np.dtype(a.dtype), 1e-1) for a in args)

    def at(self, steps: dict[int, np.ndarray]) -> list[np.ndarray] | None:
        """The primal's output leaves (float64 values) at the example moved by `steps` (by position), in this
        difference's precision; None where it fails."""
        base = {p: to_f64(self.st.args[p].value) + s for p, s in steps.items()}
        return (self._evaluate64 if self.mode == "f64" else self._evaluate_native)(base)

    def jv(self, arg: Arg, d: int, scale: float = 1.0) -> FDResult | None:
        """Central difference along direction `d` of `arg` alone (others fixed); None where non-finite."""
        return self.along((arg,), d, scale)

    def joint(self, d: int, scale: float = 1.0) -> FDResult | None:
        """Central difference along direction `d` of every differentiable argument at once."""
        return self.along(tuple(self.st.diff), d, scale)

    def along(self, args: tuple[Arg, ...], d: int, scale: float = 1.0, exact: bool = False) -> FDResult | None:
        """`J v` along direction `d` of `args` together; `exact` asks for float64 wherever the primal has it."""
        key = (tuple(a.pos for a in args), d, scale, exact)
        if key in self.cache:
            return self.cache[key]
        if not exact:
            native = self._native(args, d, scale)
            if native is not None:
                self.native_keys.add(key)
            # inconclusive in the inputs' precision: the float64 difference
            self.cache[key] = native if native is not None else self.along(args, d, scale, exact=True)
            return self.cache[key]
        result = self._difference({a.pos: self.st.direction(a, d) for a in args}, args, scale)
        if result is _INCONSISTENT:  # float64 computes something else: use the inputs' own precision
            self.mode, self.cache = "native", {}
            result = self._difference({a.pos: self.st.direction(a, d) for a in args}, args, scale)
        self.cache[key] = result
        return self.cache[key]

    def _difference(self, dirs: dict[int, np.ndarray], args: Sequence[Arg], scale: float) -> FDResult | None:
        eps = self.eps_for(args) * scale
        for _attempt in range(2):  # a step that leaves the domain (log, sqrt near 0) is retried 16x smaller once
            plus = self.at({p: eps * v for p, v in dirs.items()})
            minus = self.at({p: -eps * v for p, v in dirs.items()})
            if not (self._shaped(plus) and self._shaped(minus)):  # the output's size depends on the values
                plus = None
            if plus is not None and minus is not None and all_finite(plus) and all_finite(minus):
                if self.mode == "f64" and (self.low_precision or not self._consistent(plus, minus)):
                    return _INCONSISTENT  # type: ignore[return-value]
                jv = self._in_native_gauge([(p - m) / (2 * eps) for p, m in zip(plus, minus)], plus, minus)
                unit = 2.2e-16 if self.mode == "f64" else max(
                    float(jnp.finfo(a.dtype).eps) if is_inexact(a.dtype) else 1e-2 for a in args)
                noise = unit * max((float(np.max(np.abs(p))) if p.size else 0.0) for p in plus) / eps
                return FDResult(self.st.comparable(jv), eps, noise)
            eps /= 16
        return None

    def _native(self, args: tuple[Arg, ...], d: int, scale: float) -> FDResult | None:
        """The Richardson difference in the inputs' own precision when every entry's error bound is NATIVE_MARGIN
        times below the tolerance relative to the entry; None otherwise (and where float64 is no wider: the
        float64 path then computes the same thing it always did)."""
        if self.mode != "f64" or not any(below_64(a.value) for a in args):
            return None
        h = min(max(FD_EPS.get(np.dtype(a.dtype), 1e-1) for a in args) * NATIVE_STEP, NATIVE_MAX_STEP) * scale
        dirs = {a.pos: self.st.direction(a, d) for a in args}
        points = []
        for k in (1.0, -1.0, 0.5, -0.5, 0.25, -0.25):
            point = self._at_native({p: k * h * v for p, v in dirs.items()})
            if point is None or not all_finite(point) or not self._shaped(point):
                return None
            points.append(point)
        dtypes = [np.dtype(a.dtype) for a in args] + [np.dtype(x.dtype) for x in self.st.out_leaves
                                                     if is_inexact(np.dtype(x.dtype))]
        unit = max(float(jnp.finfo(t).eps) for t in dtypes if is_inexact(t))
        x_max = max(float(np.max(np.abs(to_f64(a.value)), initial=0.0)) for a in args)
        tol = max(grad_tol(a.dtype) for a in args)
        jv, noise = [], 0.0
        for k, native in enumerate(self.st.out_leaves):
            at = [p[k] for p in points]
            diffs = [(at[i] - at[i + 1]) / (2 * h * step) for i, step in ((0, 1.0), (2, 0.5), (4, 0.25))]
            f_abs = np.max(np.abs(np.stack(at)), axis=0)
            value, bound = richardson(diffs, h, unit, f_abs, x_max)
            if is_inexact(np.dtype(native.dtype)):
                if not np.all((bound <= np.abs(value) * tol / NATIVE_MARGIN) | (bound == 0)):
                    return None
                noise = max(noise, float(np.max(bound, initial=0.0)))
            jv.append(value)
        return FDResult(self.st.comparable(jv), h, noise)

    def _shaped(self, point: list[np.ndarray] | None) -> bool:
        """Whether an evaluation (None: it failed) has the example output's leaves and shapes: an output whose
        size is chosen from the values (an adaptive fit's support points) has no difference quotient."""
        return point is None or (len(point) == len(self.st.out_leaves) and all(
            np.shape(x) == np.shape(y) for x, y in zip(point, self.st.out_leaves)))

    def _at_native(self, steps: dict[int, np.ndarray]) -> list[np.ndarray] | None:
        return self._evaluate_native({p: to_f64(self.st.args[p].value) + s for p, s in steps.items()})

    def describe(self, arg: Arg | None, d: int) -> str:
        """What a finding quotes the difference along direction d (of `arg`, or joint for None) as."""
        args = (arg,) if arg is not None else tuple(self.st.diff)
        # native: a difference in the inputs' own precision (Richardson's, or all of them where float64 computes
        # another branch)
        if (tuple(a.pos for a in args), d, 1.0, False) in self.native_keys or self.mode == "native":
            widest = max((np.dtype(a.dtype) for a in args), key=lambda t: t.itemsize)
            return f"{widest.name} finite differences"
        return "float64 finite differences"

    def stable(self, arg: Arg | None, d: int) -> bool:
        """True when the difference along direction d (of `arg`, or joint for None) does not depend on the step:
        no kink or branch next to the example."""
        args = (arg,) if arg is not None else tuple(self.st.diff)
        a, b = self.along(args, d, exact=True), self.along(args, d, scale=8.0, exact=True)
        if a is None or b is None:
            return False
        tol = 1e-3 if self.mode == "f64" else max(grad_tol(x.dtype) for x in args)
        return all(close(x, y, tol) for x, y in zip(a.jv, b.jv))
