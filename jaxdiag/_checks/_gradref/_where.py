"""The `jnp.where` trap: why a rule's reverse mode (or its second derivatives) is NaN where forward mode is finite.

`jnp.where(x > 0, t / (2 * y), 0.0)` is finite everywhere, but where `x > 0` is false its other case may be
inf. Reverse mode sends that case a zero cotangent and multiplies it by the case's infinite partial derivative:
`0 * inf = NaN`. The checks that see such a NaN (jvp-reverse, derivative-boundary, grad-second-order) call
`where_trap` to name the select at fault, read by evaluating the subject's own JVP and VJP programs at the inputs
that showed the NaN; it only explains a NaN already observed, never makes a finding by itself.
"""

from __future__ import annotations

import linecache
import os
from typing import Any, Sequence

import jax
import numpy as np

from ... import _compat
from ..._core import _locate
from ..._core._report import Location
from ._state import GradState
from ._values import fmt_values, is_float0, quiet_call

WHERE_TRAP_FIX = (
    "Keep the case it does not select finite too (the double-where pattern): compute that case from an input "
    "made safe where it is not selected, e.g. `safe = jnp.where(cond, x, 1.0)` and then `jnp.where(cond, "
    "f(safe), 0.0)`. Reverse mode multiplies the unselected case's derivative by the zero cotangent it gets there, "
    "and 0 * inf is NaN.")


def where_trap(st: GradState, values: Sequence[Any] | None = None) -> _compat.MaskedNonFinite | None:
    """The first select in the user's code that hides a NaN/inf, in the subject's forward-mode program (where a
    JVP rule computes its tangents; not for custom_vjp, which has none) or its reverse-mode program (fwd and bwd
    at the first seeded cotangent), at `values` (full positional values; the state's own by default)."""
    full = list(values) if values is not None else [a.value for a in st.args]
    fn = st.target_at(full)
    x = [full[a.pos] for a in st.diff]
    n = len(x)
    programs: list[tuple[Any, list[Any]]] = []
    if st.kind != "custom_vjp":
        programs.append((lambda *xv: jax.jvp(fn, tuple(xv[:n]), tuple(xv[n:])), [*x, *(st.tangent(a, 0)
                                                                                       for a in st.diff)]))
    ws = st.cotangents(0)
    if not any(is_float0(w) for w in ws):
        treedef = st.out_treedef
        programs.append((lambda *xw: jax.vjp(fn, *xw[:n])[1](jax.tree_util.tree_unflatten(treedef, list(xw[n:]))),
                         [*x, *ws]))
    for program, args in programs:
        closed, exc = quiet_call(jax.make_jaxpr(program), *args)
        if exc is not None:
            continue
        found, exc = quiet_call(_compat.masked_nonfinite, closed, args)
        for trap in found if exc is None else []:
            if trap.path is not None and _locate.is_user_file(trap.path):
                return trap
    return None


def primal_saturates(st: GradState, values: Sequence[Any]) -> bool:
    """Whether the primal's own formula is singular at `values` (full positional values) and finite there only by
    saturation: `jnp.clip(jnp.floor(x / threshold), 0, m)` at threshold = 0. Its derivative there is no finite
    number a rule could be held to, whatever finite differences of the clipped value give."""
    def run(*full: Any) -> list[Any]:
        return jax.tree_util.tree_leaves(st.call_target(list(full)))

    compiled, exc = quiet_call(run, *values)
    closed, exc = (None, exc) if exc is not None else quiet_call(jax.make_jaxpr(run), *values)
    if exc is not None:
        return False
    found, exc = quiet_call(_compat.saturated_nonfinite, closed, list(values))
    if exc is not None:
        return False
    saturated, op_by_op = found
    return bool(saturated) or any(
        np.shape(a) == np.shape(b) and bool((np.isfinite(np.asarray(a)) & ~np.isfinite(np.asarray(b))).any())
        for a, b in zip(compiled, op_by_op) if np.asarray(a).dtype.kind in "fc")


def trap_text(trap: _compat.MaskedNonFinite) -> str:
    """"the jnp.where at chord.py:30 (`...`) gives 0 at index (0,) where the case it does not select is inf"."""
    where = f"{os.path.basename(trap.path or '?')}:{trap.line}"
    line = linecache.getline(os.path.abspath(trap.path), trap.line) if trap.path and trap.line else ""
    line = line.split("  #")[0].strip()  # the code, not its comment
    quoted = f" (`{line}`)" if line else ""
    return (f"the jnp.where / lax.select at {where}{quoted} gives {_number(trap.chosen)} at index {trap.index} where "
            f"the case it does not select is {_number(trap.hidden)} ({trap.count} of {trap.size} entries)")


def trap_location(trap: _compat.MaskedNonFinite | None) -> Location | None:
    if trap is None or trap.path is None or trap.line is None:
        return None
    return Location(_locate.relative_path(trap.path), trap.line, trap.function or "")


def _number(z: complex) -> str:
    return fmt_values(z.real if z.imag == 0 else z)
