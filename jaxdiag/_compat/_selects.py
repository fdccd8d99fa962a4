"""The selects (`jnp.where`, `lax.select`) of a traced program that hide a NaN/inf in the case they do not pick:
harmless for the value, NaN in reverse mode (the where trap)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from jax._src import core as _core

from ._jaxprs import _bind_as_traced, _user_frame


@dataclass(frozen=True)
class MaskedNonFinite:
    """A `select_n` (`jnp.where`, `lax.select`) that picks a finite case at an entry where another of its cases is
    NaN/inf. The value is right, but reverse mode sends that case a zero cotangent there and multiplies it by the
    case's NaN/inf partial derivative (`0 * inf = NaN`)."""

    path: str | None
    line: int | None
    function: str | None
    index: tuple[int, ...]
    hidden: complex  # the unselected case's value at `index`
    chosen: complex  # the selected value there
    count: int  # entries where a finite value hides a NaN/inf
    size: int


def masked_nonfinite(closed: Any, args: Sequence[Any]) -> list[MaskedNonFinite]:
    """Evaluates the traced `closed` jaxpr on concrete `args` equation by equation (into nested jits, where
    `jnp.where` puts its select) and returns every select whose unselected case is NaN/inf where its result is
    finite, outermost first. Calls nothing the jaxpr does not: a caller runs it through the harness all the same
    (a callback in the jaxpr runs user code)."""
    found: list[MaskedNonFinite] = []
    _evaluate(closed.jaxpr, closed.consts, list(args), found, None, None)
    return found


def saturated_nonfinite(closed: Any, args: Sequence[Any]) -> tuple[list[tuple[str, int, str] | None], list[Any]]:
    """Evaluates `closed` on concrete `args` as `masked_nonfinite` does, into the primal of a custom_jvp/custom_vjp
    call too: (the user line of every equation other than a select that turns a NaN/inf operand into a finite
    result entry, as `jnp.clip(x / threshold, 0, m)` at threshold = 0 or `exp(log(0))` do; the outputs computed
    equation by equation). Either says the program's own formula is singular there, its value finite only by
    saturation or by a rewrite of the compiler (`0 * floor(x / 0)`, NaN op by op, compiled as a select). A select
    discarding the NaN/inf case is the where trap instead (`masked_nonfinite`)."""
    saturated: list[tuple[str, int, str] | None] = []
    outs = _evaluate(closed.jaxpr, closed.consts, list(args), [], None, None, saturated)
    return saturated, outs


_CUSTOM_CALLS = ("custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr")


def _evaluate(jaxpr: Any, consts: Sequence[Any], args: Sequence[Any], found: list[MaskedNonFinite],
              outer: tuple[str, int, str] | None, jitted: str | None,
              saturated: list[tuple[str, int, str] | None] | None = None) -> list[Any]:
    """`outer`: the user line of the enclosing jit's equation; `jitted`: the name of the function that jit traced.
    A jit's inner jaxpr is traced once and cached, so the user frame recorded inside it is the caller of its first
    trace (`jnp.where`'s `_where` first traced from another rule), unless it lies in the jitted function's own body:
    only then is it kept, otherwise the enclosing equation's line is used."""
    env: dict[Any, Any] = {}

    def read(v: Any) -> Any:
        return v.val if isinstance(v, _core.Literal) else env[v]

    env.update(zip(jaxpr.constvars, consts))
    env.update(zip(jaxpr.invars, args))
    for eqn in jaxpr.eqns:
        invals = [read(v) for v in eqn.invars]
        inner = eqn.params.get("jaxpr")
        primal = eqn.params.get("call_jaxpr", eqn.params.get("fun_jaxpr"))
        if eqn.primitive.name in ("jit", "pjit") and isinstance(inner, _core.ClosedJaxpr):
            outs = _evaluate(inner.jaxpr, inner.consts, invals, found, _line_of(eqn, outer, jitted),
                             str(eqn.params.get("name", "")) or None, saturated)
        elif (saturated is not None and eqn.primitive.name in _CUSTOM_CALLS
              and isinstance(primal, _core.ClosedJaxpr) and len(primal.jaxpr.invars) == len(invals)):
            outs = _evaluate(primal.jaxpr, primal.consts, invals, found, _line_of(eqn, outer, jitted), None,
                             saturated)
        else:
            with getattr(getattr(eqn, "ctx", None), "manager", contextlib.nullcontext()):
                result = _bind_as_traced(eqn, invals)
            outs = list(result) if eqn.primitive.multiple_results else [result]
            if eqn.primitive.name == "select_n":
                _note_masked(_line_of(eqn, outer, jitted), invals, outs[0], found)
            elif saturated is not None and _saturates(invals, outs):
                saturated.append(_line_of(eqn, outer, jitted))
        env.update(zip(eqn.outvars, outs))
    return [read(v) for v in jaxpr.outvars]


def _line_of(eqn: Any, outer: tuple[str, int, str] | None, jitted: str | None) -> tuple[str, int, str] | None:
    own = _frame_of(eqn)
    if own is None or (jitted is not None and outer is not None and own[2].rpartition(".")[2] != jitted):
        return outer
    return own


def _frame_of(eqn: Any) -> tuple[str, int, str] | None:
    frame = _user_frame(eqn)
    return (frame.file_name, frame.start_line, frame.function_name) if frame is not None else None


def _note_masked(where: tuple[str, int, str] | None, invals: Sequence[Any], out: Any, found: list[MaskedNonFinite]
                 ) -> None:
    result = np.asarray(out)
    if result.dtype.kind not in "fc":
        return
    which = np.broadcast_to(np.asarray(invals[0]).astype(np.int64), result.shape)
    hidden = np.zeros(result.shape, bool)
    values = np.zeros(result.shape, result.dtype)
    for k, case in enumerate(invals[1:]):
        case_values = np.broadcast_to(np.asarray(case), result.shape)
        bad = (which != k) & ~np.isfinite(case_values) & np.isfinite(result)
        values = np.where(bad & ~hidden, case_values, values)
        hidden |= bad
    if not hidden.any():
        return
    first = tuple(int(i) for i in np.unravel_index(int(np.argmax(hidden.reshape(-1))), hidden.shape))
    path, line, function = where if where is not None else (None, None, None)
    found.append(MaskedNonFinite(path, line, function, first,
                                 complex(values[first]), complex(result[first]), int(hidden.sum()),
                                 int(hidden.size)))


def _saturates(invals: Sequence[Any], outs: Sequence[Any]) -> bool:
    """An entry of a floating result finite where a floating operand is NaN/inf: entry by entry for an operand
    shaped (or broadcast) like the result, else a NaN/inf anywhere in the operand with the whole result finite."""
    def floating(v: Any) -> np.ndarray | None:
        arr = np.asarray(v) if hasattr(v, "dtype") or isinstance(v, (int, float, complex)) else None
        return arr if arr is not None and arr.dtype.kind in "fc" else None

    operands = [a for a in map(floating, invals) if a is not None and not np.isfinite(a).all()]
    for result in (r for r in map(floating, outs) if r is not None):
        finite = np.isfinite(result)
        for operand in operands:
            try:
                shaped = np.broadcast_shapes(operand.shape, result.shape) == result.shape
            except ValueError:
                shaped = False
            bad = ~np.isfinite(np.broadcast_to(operand, result.shape)) if shaped else None
            if (finite & bad).any() if bad is not None else finite.all():
                return True
    return False
