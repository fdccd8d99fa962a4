"""Constants and small value helpers of the grad checks: dtypes and avals as text, tolerances, float64
conversion, inner products (`dot`, `absdot`), closeness tests and a warning-free call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

from ... import _compat
from ..._loading._inputs import SHORT_NAMES
from ..._loading._numerics import GRAD_TOL, compare, tolerance
from ..._harness import call_user

# Directions per differentiable argument ("several random directions"); each costs two evaluations of the primal.
N_DIRECTIONS = 2
# Finite-difference step when the primal can be evaluated in float64 (relative to max(1, |x|) per element).
EPS_F64 = 1e-6
# Tolerance of the primal comparisons (rule primal vs f, relative to 1 + |f|): a rule may compute the same value
# with another formula, so a few ulps more than _numerics.VALUE_TOL for float32/float64, about 6 ulps for the
# half-precision types.
PRIMAL_TOL = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 2e-4, np.dtype(np.float16): 5e-3,
              np.dtype(jnp.bfloat16): 4e-2, np.dtype(np.complex128): 1e-10, np.dtype(np.complex64): 2e-4}


# ---------------------------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------------------------


_BF16 = np.dtype(jnp.bfloat16)


def is_inexact(dtype: Any) -> bool:
    """Differentiable as JAX decides it, from JAX's dtype categories (never NumPy's `kind`: bfloat16 and the
    float8/float4 types have kind "V" or "f" depending on the ml_dtypes release, and are floating to JAX)."""
    dtype = np.dtype(dtype)
    return dtype != _compat.float0 and bool(jnp.issubdtype(dtype, jnp.inexact))


def is_float0(x: Any) -> bool:
    """float0 (the tangent type of integer inputs). Not `dtype.kind == "V"`: bfloat16 has kind "V" too."""
    dtype = getattr(x, "dtype", None)
    return dtype is not None and np.dtype(dtype) == _compat.float0


def short_dtype(dtype: Any) -> str:
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        return str(dtype)
    if dtype == _compat.float0:
        return "float0"
    return SHORT_NAMES.get(dtype, dtype.name)


def aval_text(x: Any) -> str:
    """`f32[3]`, `None`, `(f32[3], None)`, `[f32[], f32[]]`: what a rule returned, in jaxpr notation."""
    if x is None:
        return "None"
    if _compat.is_symbolic_zero(x):
        return f"symbolic zero {short_dtype(x.aval.dtype)}{list(x.aval.shape)}".replace(" ", "")
    if isinstance(x, tuple):
        return f"({', '.join(aval_text(e) for e in x)}{',' if len(x) == 1 else ''})"
    if isinstance(x, list):
        return f"[{', '.join(aval_text(e) for e in x)}]"
    shape = getattr(x, "shape", None)
    dtype = getattr(x, "dtype", None)
    if shape is None or dtype is None:
        return type(x).__name__
    return f"{short_dtype(dtype)}[{','.join(map(str, shape))}]"


def fmt_values(x: Any, limit: int = 4) -> str:
    """A short rendering of an array's values: `[0.5403, -0.4161, 1]` (first `limit` elements)."""
    if is_float0(x):
        return "float0 zeros"
    arr = np.asarray(x)
    if arr.dtype == _BF16:
        arr = arr.astype(np.float32)
    flat = arr.reshape(-1)
    # + 0.0 turns -0.0 into 0.0: "[0, -0, 0]" reads like a sign error
    items = [f"{complex(v) + 0.0:.4g}" if arr.dtype.kind == "c" else f"{float(v) + 0.0:.4g}" for v in flat[:limit]]
    more = ", ..." if flat.size > limit else ""
    return f"{items[0]}" if arr.ndim == 0 else f"[{', '.join(items)}{more}]"


def close(actual: Any, expected: Any, tol: float) -> bool:
    """`|a - e| <= tol * (1 + |e|)` elementwise, as `_numerics.compare` but without building the report (the
    hot path). A position where `expected` (the reference) is NaN/inf says nothing and never counts; one where
    only `actual` is NaN/inf does: a NaN the reference does not have is a difference (`nonfinite_split` says
    where)."""
    a, e = to_f64(actual), to_f64(expected)
    if a.shape != e.shape:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.abs(a - e) <= tol * (1.0 + np.abs(e))
        return bool(np.all(ok | ~np.isfinite(e) | (a == e)))


def grad_tol(dtype: Any) -> float:
    return tolerance(dtype, GRAD_TOL)


def primal_tol(dtype: Any) -> float:
    return tolerance(dtype, PRIMAL_TOL)


def device_zeros(shape: tuple[int, ...], dtype: Any) -> Any:
    """`jnp.zeros(shape, dtype)` without compiling anything: jnp.zeros is an XLA computation compiled once per
    shape and dtype, a host array is only copied to the device."""
    return _compat.device_array(np.zeros(shape, dtype))


def host_linear(dtype: Any, *terms: tuple[float, Any]) -> Any:
    """`sum(c * x)` of arrays of one dtype, on the host, as a device array of that dtype: one eager JAX op per
    probe would compile one XLA computation each. The result is the same: every term and partial sum is
    rounded to `dtype` as JAX's eager ops round them (float32 arithmetic is exact for bfloat16/float16 products
    by the small scales used here)."""
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    total = None
    for scale, x in terms:
        term = (np.asarray(x).astype(wide) * scale).astype(dtype)
        total = term if total is None else (total.astype(wide) + term.astype(wide)).astype(dtype)
    return _compat.device_array(total)


def to_f64(x: Any) -> np.ndarray:
    """float64 (complex128) copy; float0 becomes zeros."""
    if is_float0(x):
        return np.zeros(np.shape(x))
    arr = np.asarray(x)
    if arr.dtype.kind == "c":
        return arr.astype(np.complex128)
    return arr.astype(np.float64)


def dot(a: Any, b: Any) -> float:
    """`Re(sum(a * b))` in float64, the bilinear pairing under which JAX's VJP is the transpose of its JVP (no
    conjugation: `jax.vjp(f)(w)` pairs with `w`, not `conj(w)`); None and float0 count as zero."""
    if a is None or b is None:
        return 0.0
    a64, b64 = to_f64(a), to_f64(b)
    if a64.shape != b64.shape:  # a shape defect is reported by the structure checks; never a crash here
        return float("nan")
    return float(np.real(np.sum(a64 * b64)))


def absdot(a: Any, b: Any) -> float:
    """`sum(|a| |b|)`: the scale an inner product's rounding error is relative to."""
    if a is None or b is None:
        return 0.0
    a64, b64 = np.abs(to_f64(a)), np.abs(to_f64(b))
    if a64.shape != b64.shape:
        return float("nan")
    return float(np.sum(a64 * b64))


def close_scalar(actual: float, expected: float, scale: float, tol: float) -> bool:
    """Scalar closeness for inner products: relative to the magnitude of the terms summed, not of the result
    (which may cancel), with a tiny absolute floor so that exact zeros on both sides agree."""
    return abs(actual - expected) <= tol * (scale + 1e-30) + 1e-12 * tol


def is_zero(x: Any) -> bool:
    """None, a symbolic zero, float0, or an array of exact zeros."""
    if x is None or _compat.is_symbolic_zero(x):
        return True
    return is_float0(x) or not np.any(np.asarray(x))


@dataclass(frozen=True)
class NonFinite:
    """Where a rule's derivative and its reference disagree about being finite, entry by entry."""

    rule_only: int  # entries NaN/inf in the rule's value where the reference is finite: a defect
    ref_only: int  # entries NaN/inf in the reference where the rule's value is finite: a note
    size: int
    rule_index: tuple[int, ...] | None = None  # the first entry of each kind
    ref_index: tuple[int, ...] | None = None

    def __bool__(self) -> bool:
        return bool(self.rule_only or self.ref_only)


def nonfinite_split(got: Any, ref: Any) -> NonFinite:
    """Count the entries where exactly one of `got` (a rule's cotangent/tangent; None counts as zeros) and `ref`
    is NaN/inf. Shapes that differ are a structure defect reported elsewhere: nothing here."""
    if ref is None or is_float0(ref) or not is_inexact(np.asarray(ref).dtype):
        return NonFinite(0, 0, 0)
    r = np.isfinite(to_f64(ref))
    g = np.ones_like(r) if got is None or _compat.is_symbolic_zero(got) or is_float0(got) \
        else np.isfinite(to_f64(got))
    if g.shape != r.shape:
        return NonFinite(0, 0, int(r.size))
    rule_bad, ref_bad = ~g & r, g & ~r

    def first(mask: np.ndarray) -> tuple[int, ...] | None:
        if not mask.any():
            return None
        return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask.reshape(-1))), mask.shape))

    return NonFinite(int(rule_bad.sum()), int(ref_bad.sum()), int(r.size), first(rule_bad), first(ref_bad))


def value_at(x: Any, index: tuple[int, ...] | None) -> str:
    """One entry of an array as text (`nan`, `-inf`, `0.5403`)."""
    if x is None or index is None:
        return "?"
    value = to_f64(x)[index] if index else to_f64(x)[()]
    return f"{complex(value) + 0.0:.4g}" if np.iscomplexobj(value) else f"{float(value) + 0.0:.4g}"


def all_finite(leaves: Iterable[Any]) -> bool:
    for leaf in leaves:
        if is_float0(leaf) or not is_inexact(np.asarray(leaf).dtype):
            continue
        if not np.all(np.isfinite(to_f64(leaf))):
            return False
    return True


def quiet_call(fn: Callable, /, *args: Any, **kwargs: Any) -> tuple[Any, BaseException | None]:
    """(result, None) or (None, the exception): user rules are called through this so a rule that raises becomes
    a finding and never a jaxdiag crash. Warnings from the user's code are not jaxdiag's output."""
    ran = call_user(fn, *args, quiet=True, **kwargs)
    return ran.value, ran.error


def leaf_difference(got: Any, want: Any) -> str | None:
    """How a rule's primal output leaf differs from the function's (shape, dtype, value), or None."""
    got_shape, want_shape = tuple(np.shape(got)), tuple(np.shape(want))
    got_dtype, want_dtype = np.asarray(got).dtype, np.asarray(want).dtype
    if got_shape != want_shape:
        return f"shape {aval_text(got)} instead of {aval_text(want)}"
    if got_dtype != want_dtype:
        return f"dtype {short_dtype(got_dtype)} instead of {short_dtype(want_dtype)}"
    if not is_inexact(want_dtype) and not is_float0(got):
        equal = np.array_equal(np.asarray(got), np.asarray(want))
        return None if equal else f"values {fmt_values(got)} instead of {fmt_values(want)}"
    if close(got, want, primal_tol(want_dtype)):
        return None
    cmp = compare(to_f64(got), to_f64(want), tol=primal_tol(want_dtype))
    return None if cmp.ok or cmp.nonfinite and cmp.max_abs == 0 else f"value {cmp.describe()}"


def example_cotangent(w: Any, j: int) -> Any:
    """Example j's output cotangent in vjp(vmap f): `w` rolled by j and scaled by 1 + j, so that every example's
    cotangent differs in direction and size. float0 cotangents stay as they are."""
    if is_float0(w):
        return w
    flat = jnp.roll(jnp.ravel(w), j)
    return ((1 + j) * flat).reshape(jnp.shape(w)).astype(w.dtype)


def host_example_cotangent(w: Any, j: int) -> Any:
    """`example_cotangent` computed with NumPy (the same values: a roll and an exact integer scale), so the
    eager loop compiles no roll/scale operations of its own."""
    if is_float0(w):
        return w
    host = np.asarray(w)
    flat = np.roll(host.reshape(-1), j)
    return _compat.device_array(((1 + j) * flat).reshape(host.shape).astype(host.dtype))
