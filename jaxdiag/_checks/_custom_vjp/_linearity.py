"""Check vjp-linearity: bwd must be linear in the cotangent (JXG036).

JAX calls bwd with whatever cotangent reaches the function: 1 for `jax.grad` of the function alone, a weight in a
weighted loss, zeros for an output nobody uses. A term of the returned gradient that is not multiplied by the
cotangent (`2 * x * g - c` where `(2 * x - c) * g` was meant) is right at `g = 1` only. The check calls bwd at a
zero cotangent, where a linear map returns zeros.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

import numpy as np

from ... import _rules as rules
from ..._core._report import Finding, Location
from ..._harness.source import return_nodes
from .._base import Context, SkipCheck, check
from .._gradref import NOT_COMPUTED, device_zeros, fmt_values, grad_tol, is_zero, locate, require, state, to_f64
from ._fwd_bwd import _as_entries, _names, call_bwd


@check("vjp-linearity", family="grad", kinds={"custom_vjp"}, needs=("grad.fwd", "grad.bwd_full"),
       reads=("grad.blocked.vjp-fwd", "grad.blocked.vjp-bwd-structure"),
       provides=("grad.blocked.vjp-linearity", "grad.second_order_moot"))
def vjp_linearity(ctx: Context) -> Iterator[Finding]:
    """bwd at a zero cotangent on every output returns zeros (JXG036)."""
    st = state(ctx)
    require(st, (rules.DERIVATIVE_RULE_RAISED, rules.VJP_FWD_MISMATCH, rules.VJP_BWD_STRUCTURE))
    if st.memo.bwd_full is NOT_COMPUTED:
        raise SkipCheck("bwd was not checked")
    if not st.diff:
        raise SkipCheck("no floating-point argument to differentiate")
    ws = st.cotangents(0)
    zeros = [device_zeros(np.shape(w), w.dtype) if st.out_diff(k) else w for k, w in enumerate(ws)]
    result, exc = call_bwd(st, zeros)
    if exc is not None or not isinstance(result, (tuple, list)) or len(result) != len(st.dyn):
        return  # a bwd that fails on zeros is vjp-cotangents' to report (JXG017)
    at_zero = _as_entries(st, result)
    full = st.memo.bwd_full
    for a in st.diff:
        entry = at_zero.get(a.pos)
        if is_zero(entry):
            continue
        values = to_f64(entry)
        scale = float(np.max(np.abs(to_f64(full.get(a.pos))), initial=0.0)) if not is_zero(full.get(a.pos)) else 0.0
        offending = np.isfinite(values) & (np.abs(values) > grad_tol(a.dtype) * max(scale, 1.0))
        if not offending.any():
            continue  # NaN at zero (0 * inf) is the derivative-boundary check's; tiny values are rounding
        # only the cotangent probes are moot (every value they compare has the stray part); compositions under
        # jit/vmap still say something, so this is no blocker of every later check
        st.memo.bwd_not_linear = True
        st.memo.second_order_moot = f"the first-order derivative is already wrong ({rules.BWD_NOT_LINEAR.code})"
        yield _finding(st, a, values, offending, full.get(a.pos))
        return


def _finding(st: Any, a: Any, values: np.ndarray, offending: np.ndarray, at_w: Any) -> Finding:
    fun, _, bwd = _names(st)
    index = tuple(int(i) for i in np.unravel_index(int(np.argmax(offending.reshape(-1))), offending.shape))
    doubled = _at_twice(st, a)
    where = f" (e.g. {values[index]:.4g} at index {index}; {int(offending.sum())} of {offending.size} entries " \
        "nonzero)" if values.size > 1 else ""
    evidence = (f"with a cotangent of zeros on every output of {fun}, it returns {fmt_values(values)} for {a.name}"
                f"{where}, where a linear map returns zeros")
    if doubled is not None and not is_zero(at_w):
        evidence += (f"; at a random cotangent w it returns {fmt_values(to_f64(at_w))} and at 2w "
                     f"{fmt_values(doubled)}, not twice that")
    evidence += (". The cotangent is 1 only under jax.grad of the function alone: a weighted loss, a chain rule or "
                 "an unused output (JAX passes it zeros) gets the part that ignores it all the same, silently")
    return rules.BWD_NOT_LINEAR.finding(
        bwd=bwd, evidence=evidence,
        fix=f"Multiply every term of {bwd}'s gradient for {a.name} by the cotangent: a term computed from the "
            "residuals alone (`a * g - c`) must be `(a - c) * g`. If that entry is deliberately not a gradient (state "
            f"handed back through it), add `# jaxdiag: ignore[{rules.BWD_NOT_LINEAR.code}]` to the reported line.",
        location=_return_line(st, a) or locate(st.bwd))


def _return_line(st: Any, a: Any) -> Location | None:
    """The line of bwd's only `return`, where the gradient's terms are written: the line of `a`'s entry when it
    returns a tuple written out with one entry per argument."""
    returns = return_nodes(st.bwd)
    where = locate(st.bwd)
    if len(returns) != 1 or where is None:
        return None
    line, node = returns[0]
    entries = node.value.elts if isinstance(node.value, ast.Tuple) else []
    position = [b.pos for b in st.dyn].index(a.pos) if a in st.dyn else None
    if len(entries) == len(st.dyn) and position is not None:
        line += entries[position].lineno - node.lineno
    return Location(where.path, line, where.function)


def _at_twice(st: Any, a: Any) -> np.ndarray | None:
    """bwd's entry for `a` at twice the first seeded cotangent (the evidence a user can recompute)."""
    ws = st.cotangents(0)
    doubled = [2 * w if st.out_diff(k) else w for k, w in enumerate(ws)]
    result, exc = call_bwd(st, doubled)
    if exc is not None or not isinstance(result, (tuple, list)) or len(result) != len(st.dyn):
        return None
    entry = _as_entries(st, result).get(a.pos)
    return None if is_zero(entry) else to_f64(entry)
