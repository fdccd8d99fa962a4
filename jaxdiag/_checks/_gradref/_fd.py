"""Finite differences: central differences of the primal along the seeded directions, in float64 where the
primal runs in float64, in its own dtype otherwise (`FiniteDifferences`, `FDResult`).
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


def _below_64(x: Any) -> bool:
    dtype = np.dtype(getattr(x, "dtype", np.asarray(x).dtype))
    return is_inexact(dtype) and (dtype.kind == "c" and dtype.itemsize < 16 or dtype.kind != "c" and dtype.itemsize < 8)


class FiniteDifferences:
    """Central differences of the primal along seeded directions, evaluated in float64 where the primal runs in
    float64 (x64 scoped to the evaluation), in its own dtype otherwise. Non-finite points are dropped, never
    compared."""

    def __init__(self, st: GradState):
        self.st = st
        self.cache: dict[tuple, FDResult | None] = {}
        self.low_precision = False
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
        for p, m, native in zip(plus, minus, self.st.out_leaves):
            if p.shape != tuple(np.shape(native)):
                return False
            if is_inexact(np.dtype(native.dtype)) and not close((p + m) / 2, native, primal_tol(native.dtype) * 10):
                return False
        return True

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
            out, exc = quiet_call(self.st.call_primal, values)
            if exc is not None:
                return None
            leaves = jax.tree_util.tree_leaves(out)
            if any(_below_64(x) for x in leaves):
                self.low_precision = True  # float64 inputs, lower-precision outputs: the primal casts down
            return [to_f64(x) if not is_float0(x) else np.zeros(np.shape(x)) for x in leaves]

    def _evaluate_native(self, shifted: dict[int, np.ndarray]) -> list[np.ndarray] | None:
        values = self.st.values({p: _compat.device_array(v.astype(self.st.args[p].dtype)) for p, v in shifted.items()})
        out, exc = quiet_call(self.st.call_primal, values)
        if exc is not None:
            return None
        return [to_f64(x) for x in jax.tree_util.tree_leaves(out)]

    def eps_for(self, args: Sequence[Arg]) -> float:
        if self.mode == "f64":
            return EPS_F64
        # the primal only runs in its own precision: the step per dtype of _numerics.FD_EPS (bf16 1e-1 ... f64 1e-5)
        return max(FD_EPS.get(np.dtype(a.dtype), 1e-1) for a in args)

    def _at(self, steps: dict[int, np.ndarray]) -> list[np.ndarray] | None:
        base = {p: to_f64(self.st.args[p].value) + s for p, s in steps.items()}
        return (self._evaluate64 if self.mode == "f64" else self._evaluate_native)(base)

    def jv(self, arg: Arg, d: int, scale: float = 1.0) -> FDResult | None:
        """Central difference along direction `d` of `arg` alone (others fixed); None where non-finite."""
        return self.along((arg,), d, scale)

    def joint(self, d: int, scale: float = 1.0) -> FDResult | None:
        """Central difference along direction `d` of every differentiable argument at once."""
        return self.along(tuple(self.st.diff), d, scale)

    def along(self, args: tuple[Arg, ...], d: int, scale: float = 1.0) -> FDResult | None:
        key = (tuple(a.pos for a in args), d, scale)
        if key not in self.cache:
            result = self._difference({a.pos: self.st.direction(a, d) for a in args}, args, scale)
            if result is _INCONSISTENT:  # float64 computes something else: use the inputs' own precision
                self.mode, self.cache = "native", {}
                result = self._difference({a.pos: self.st.direction(a, d) for a in args}, args, scale)
            self.cache[key] = result
        return self.cache[key]

    def _difference(self, dirs: dict[int, np.ndarray], args: Sequence[Arg], scale: float) -> FDResult | None:
        eps = self.eps_for(args) * scale
        for _attempt in range(2):  # a step that leaves the domain (log, sqrt near 0) is retried 16x smaller once
            plus = self._at({p: eps * v for p, v in dirs.items()})
            minus = self._at({p: -eps * v for p, v in dirs.items()})
            if plus is not None and minus is not None and all_finite(plus) and all_finite(minus):
                if self.mode == "f64" and (self.low_precision or not self._consistent(plus, minus)):
                    return _INCONSISTENT  # type: ignore[return-value]
                jv = [(p - m) / (2 * eps) for p, m in zip(plus, minus)]
                unit = 2.2e-16 if self.mode == "f64" else max(
                    float(jnp.finfo(a.dtype).eps) if is_inexact(a.dtype) else 1e-2 for a in args)
                noise = unit * max((float(np.max(np.abs(p))) if p.size else 0.0) for p in plus) / eps
                return FDResult(jv, eps, noise)
            eps /= 16
        return None

    def stable(self, arg: Arg | None, d: int) -> bool:
        """True when the difference along direction d (of `arg`, or joint for None) does not depend on the step:
        no kink or branch next to the example."""
        args = (arg,) if arg is not None else tuple(self.st.diff)
        a, b = self.along(args, d), self.along(args, d, scale=8.0)
        if a is None or b is None:
            return False
        tol = 1e-3 if self.mode == "f64" else max(grad_tol(x.dtype) for x in args)
        return all(close(x, y, tol) for x, y in zip(a.jv, b.jv))
