"""Numerical comparison: dtype-aware tolerances (after `jax/_src/public_test_util.py`), closeness that returns a
result instead of raising, inner products for dot-product tests, and central finite differences.

Checks turn a `Comparison` into a `Finding`; nothing here raises on a mismatch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import ml_dtypes
import numpy as np

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F0 = None  # float0 compares by shape only

# Tolerance for comparing values computed two ways (vmap vs loop, rule primal vs function): reductions may be
# reordered, so these are looser than public_test_util's `_default_tolerance`.
VALUE_TOL: dict[Any, float] = {
    np.dtype(np.bool_): 0, np.dtype(np.int8): 0, np.dtype(np.int16): 0, np.dtype(np.int32): 0,
    np.dtype(np.int64): 0, np.dtype(np.uint8): 0, np.dtype(np.uint16): 0, np.dtype(np.uint32): 0,
    np.dtype(np.uint64): 0,
    _BF16: 3e-2, np.dtype(np.float16): 5e-3,
    np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12,
    np.dtype(np.complex64): 2e-5, np.dtype(np.complex128): 1e-12,
}
# Tolerance for derivatives against finite differences (public_test_util's `default_gradient_tolerance`).
GRAD_TOL: dict[Any, float] = {
    _BF16: 1e-1, np.dtype(np.float16): 5e-2,
    np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 2e-3, np.dtype(np.complex128): 1e-5,
}
# Finite-difference step per dtype (computed in float64, so the step serves the function's own precision).
FD_EPS: dict[Any, float] = {
    _BF16: 1e-1, np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-5,
    np.dtype(np.complex64): 1e-3, np.dtype(np.complex128): 1e-5,
}


def _is_float0(dtype: np.dtype) -> bool:
    """JAX's float0 is the structured dtype [('float0', 'V')]. Not `kind == "V"`: bfloat16 has kind "V" too."""
    return dtype.names == ("float0",)


def tolerance(dtype: Any, table: dict[Any, float] = VALUE_TOL) -> float:
    dtype = np.dtype(dtype)
    if dtype in table:
        return table[dtype]
    return 0.0 if dtype.kind in "biuV" else table.get(np.dtype(np.float32), 1e-5)


# Relative differences above this are shown as absolute ones only.
_SHOWN_REL = 1e6


@dataclass(frozen=True)
class Comparison:
    """The outcome of comparing `actual` with `expected`: never raises, carries the numbers for the message."""

    ok: bool
    max_abs: float
    max_rel: float
    tol: float
    shape_actual: tuple[int, ...]
    shape_expected: tuple[int, ...]
    dtype_actual: str
    dtype_expected: str
    nonfinite: bool = False  # a NaN/inf mismatch: never report a defect from it
    index: tuple[int, ...] | None = None  # where the largest difference is
    actual_value: Any = None
    expected_value: Any = None

    @property
    def shape_mismatch(self) -> bool:
        return self.shape_actual != self.shape_expected

    def describe(self) -> str:
        if self.shape_mismatch:
            return f"shape {self.shape_actual} instead of {self.shape_expected}"
        where = f" at index {self.index}" if self.index else ""
        # relative to an expected value of (nearly) zero, the ratio is noise (1e+307): left out
        rel = f"max rel {self.max_rel:.3g}, " if self.max_rel < _SHOWN_REL else ""
        return (f"max abs difference {self.max_abs:.3g} ({rel}tolerance {self.tol:.1g}){where}"
                f": got {_fmt(self.actual_value)}, expected {_fmt(self.expected_value)}")


def _fmt(value: Any) -> str:
    if value is None:
        return "?"
    if isinstance(value, (complex, np.complexfloating)):
        return f"{complex(value):.4g}"
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return str(value)


def _as_float64(x: Any) -> np.ndarray:
    arr = np.asarray(x)
    if arr.dtype == _BF16 or arr.dtype.kind in "biuf":
        return arr.astype(np.float64)
    if arr.dtype.kind == "c":
        return arr.astype(np.complex128)
    return arr


def compare(actual: Any, expected: Any, tol: float | None = None, table: dict[Any, float] = VALUE_TOL) -> Comparison:
    """Compare two arrays with `|a - e| <= tol * (1 + |e|)`; NaN/inf positions must agree and are not a defect."""
    a_raw, e_raw = np.asarray(actual), np.asarray(expected)
    if tol is None:
        tol = max(tolerance(a_raw.dtype, table), tolerance(e_raw.dtype, table))
    base: dict[str, Any] = dict(shape_actual=tuple(a_raw.shape), shape_expected=tuple(e_raw.shape),
                                dtype_actual=str(a_raw.dtype), dtype_expected=str(e_raw.dtype), tol=tol)
    if a_raw.shape != e_raw.shape:
        return Comparison(ok=False, max_abs=float("inf"), max_rel=float("inf"), **base)
    if _is_float0(a_raw.dtype) or _is_float0(e_raw.dtype):
        return Comparison(ok=True, max_abs=0.0, max_rel=0.0, **base)
    a, e = _as_float64(a_raw), _as_float64(e_raw)
    finite = np.isfinite(a) & np.isfinite(e)
    nonfinite_disagree = bool(np.any(~finite & ~((a == e) | (np.isnan(a) & np.isnan(e)))))
    if not np.any(finite):
        return Comparison(ok=True, max_abs=0.0, max_rel=0.0, nonfinite=nonfinite_disagree, **base)
    diff = np.where(finite, np.abs(a - e), 0.0)
    scale = np.where(finite, np.abs(e), 0.0)
    excess = diff - tol * (1.0 + scale)
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape) if excess.ndim else ()
    max_abs = float(np.max(diff))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # huge diffs over tiny scales
        max_rel = float(np.max(diff / np.maximum(scale, np.finfo(np.float64).tiny)))
    ok = bool(np.all(excess <= 0))
    return Comparison(ok=ok, max_abs=max_abs, max_rel=max_rel, nonfinite=nonfinite_disagree,
                      index=tuple(int(i) for i in worst) if excess.ndim else None,
                      actual_value=a[worst] if excess.ndim else a[()],
                      expected_value=e[worst] if excess.ndim else e[()], **base)


def inner(xs: Sequence[Any], ys: Sequence[Any]) -> float:
    """Sum of elementwise products over matching leaves, in float64 (real part)."""
    total = 0.0
    for x, y in zip(xs, ys):
        if x is None or y is None:
            continue
        xa, ya = _as_float64(x), _as_float64(y)
        if _is_float0(xa.dtype) or _is_float0(ya.dtype):
            continue
        total += float(np.real(np.sum(np.conj(xa) * ya)))
    return total


def central_difference(f: Callable[[list[np.ndarray]], list[np.ndarray]], xs: list[np.ndarray],
                       ts: list[np.ndarray], eps: float) -> list[np.ndarray]:
    """(f(x + eps t) - f(x - eps t)) / 2 eps, leaf by leaf; `f` maps a list of arrays to a list of arrays."""
    plus = f([x + eps * t for x, t in zip(xs, ts)])
    minus = f([x - eps * t for x, t in zip(xs, ts)])
    return [(_as_float64(p) - _as_float64(m)) / (2 * eps) for p, m in zip(plus, minus)]


def fd_eps(dtypes: Sequence[Any]) -> float:
    """The largest step any input's dtype calls for."""
    return max((FD_EPS.get(np.dtype(d), 1e-3) for d in dtypes), default=1e-3)


# The reductions over the batch a rule may return as one batch-wide value, by name: boolean outputs aggregate with
# any/all, the others with max/min/sum/mean (a batch statistic, a stop condition shared by the whole batch).
_BATCH_REDUCTIONS: tuple[tuple[str, Callable[..., Any]], ...] = (
    ("maximum", np.max), ("minimum", np.min), ("sum", np.sum), ("mean", np.mean))
_BOOL_REDUCTIONS: tuple[tuple[str, Callable[..., Any]], ...] = (("logical OR", np.any), ("logical AND", np.all))


def batch_aggregate(value: Any, per_example: Any) -> str | None:
    """What the single batch-wide `value` is of the per-example outputs `per_example` (stacked, batch first): the
    name of the reduction over the batch it equals ("maximum", "sum", "logical OR", ...), "the whole batch" when
    it is the stacked outputs themselves (the batch kept as an ordinary axis), or None: not an aggregate, or the
    examples do not differ. (A scalar maximum is also one example's own value: a caller that must tell "one
    example's result for all" apart probes more, e.g. with the batch permuted.)"""
    v, w = np.asarray(value), np.asarray(per_example)
    if w.ndim < 1 or w.shape[0] < 2 or w.dtype.kind not in "biuf":
        return None
    if compare(w, np.broadcast_to(w[:1], w.shape)).ok:
        return None  # every example gives the same: nothing to aggregate
    if v.shape == w.shape and compare(v, w).ok:
        return "the whole batch"
    if v.shape != w.shape[1:]:
        return None
    table = _BOOL_REDUCTIONS if w.dtype.kind == "b" else _BATCH_REDUCTIONS
    for name, reduce in table:
        if compare(v, reduce(w, axis=0).astype(w.dtype if w.dtype.kind == "b" else v.dtype)).ok:
            return name
    return None
