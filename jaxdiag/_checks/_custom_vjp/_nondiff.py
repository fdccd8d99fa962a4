"""Check nondiff-argnums: nondiff_argnums holding arrays (custom_vjp and custom_jvp, JXG015).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ... import _compat
from ... import _rules as rules
from ..._core._report import Finding
from .._base import Context, SkipCheck, check
from .._gradref import GradState, is_inexact, locate, quiet_call, rule_name, short_message, state

# ---------------------------------------------------------------------------------------------------------------
# nondiff_argnums holding arrays (custom_vjp and custom_jvp)
# ---------------------------------------------------------------------------------------------------------------


@check("nondiff-argnums", family="grad", kinds={"custom_vjp", "custom_jvp"})
def nondiff_arrays(ctx: Context) -> Iterator[Finding]:
    """An array in nondiff_argnums works eagerly but fails once it is traced (jit, scan): JXG015."""
    st = state(ctx)
    arrays = [st.args[i] for i in st.nondiff if i < len(st.args) and not st.args[i].static]
    if not arrays:
        raise SkipCheck("no array in nondiff_argnums")
    exc, how = _traced_nondiff_error(st)
    if exc is None:
        return
    fun = rule_name(st.fun, "f")
    names = ", ".join(a.text for a in arrays)
    yield rules.NONDIFF_ARGNUMS_MISUSE.finding(
        evidence=f"{fun} has array argument(s) {names} in nondiff_argnums={st.nondiff}: eager calls work, but {how} "
                 f"fails "
        f"with {type(exc).__name__}: {short_message(exc, 160)} nondiff_argnums is for static values (ints, "
        "callables), not arrays.",
        fix=f"Remove {', '.join(a.name for a in arrays)} from nondiff_argnums and make it a regular argument "
            "(return None or a zero cotangent for it), or close over it.",
        location=locate(st.fun))


def _traced_nondiff_error(st: GradState) -> tuple[BaseException | None, str]:
    """The UnexpectedTracerError of jit(grad) (custom_vjp) or jit(grad(scan)) (custom_jvp, jax#20889) with the
    nondiff arrays passed as traced arguments, or (None, "") when both work."""
    positions = [a.pos for a in st.args if not a.static and (a.diff or a.nondiff)]
    argnums = tuple(positions.index(a.pos) for a in st.diff)
    if not argnums:
        return None, ""

    def total(out: Any) -> Any:
        leaves = [leaf for leaf in jax.tree_util.tree_leaves(out) if is_inexact(np.dtype(leaf.dtype))]
        return sum(jnp.sum(jnp.real(leaf)) for leaf in leaves)

    def loss(*values: Any) -> Any:
        return total(st.call_target(st.values(dict(zip(positions, values)))))

    def loss_in_scan(*values: Any) -> Any:
        def body(carry: Any, diffs: Any) -> tuple[Any, Any]:
            full = dict(zip(positions, values))
            full.update({positions[i]: d for i, d in zip(argnums, diffs)})
            return carry, total(st.call_target(st.values(full)))
        stacked = [values[i][None] for i in argnums]
        return jax.lax.scan(body, 0.0, stacked)[1].sum()

    concrete = [st.args[p].value for p in positions]
    for fn, how in ((loss, "jax.jit(jax.grad(...))"), (loss_in_scan, "jax.jit(jax.grad(...)) around a lax.scan")):
        _, exc = quiet_call(lambda: jax.jit(jax.grad(fn, argnums=argnums))(*concrete))  # noqa: B023 - called at once
        if exc is not None and _compat.is_unexpected_tracer_error(exc):
            return exc, how
    return None, ""
