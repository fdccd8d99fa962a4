"""The operands an equation of a traced program receives when the program runs, computed by one compiled program.

`jaxdiag check` finds a user primitive that only a derivative rule binds in the trace of `jax.jvp` (or `jax.grad`)
of the function that reaches it, and checks it at the values it receives there. Running the whole differentiated
function eagerly under `jax.disable_jit()` to read them ran an adaptive quadrature's loops op by op in Python (12 s
for one bind of quadax). Here the trace is evaluated up to that equation under one `jit`: XLA drops what the
operands do not need, and loops before it compile once. An equation inside a loop or a branch receives other
values at each iteration, so only one reached through calls (jit, custom_jvp/custom_vjp calls, remat) is evaluated.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
from jax._src import core as _core

from ._jaxprs import _bind_as_traced, evaluation_env
from ._own_programs import own_jit

# Equations that call their body once with their own operands: the path to an equation may go through them.
_CALLS = frozenset({"pjit", "jit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
                    "custom_vjp_call_jaxpr", "remat", "checkpoint"})


def reaches_operands(closed: Any, target: Any) -> bool:
    """Whether `operands_at` can evaluate `target` in `closed`: at its top level or inside calls only."""
    return _body_path(closed.jaxpr if isinstance(closed, _core.ClosedJaxpr) else closed, target)


def operands_at(closed: Any, target: Any, args: list[Any]) -> list[np.ndarray] | None:
    """The values equation `target` receives when `closed` runs on `args`, or None where it is not reached through
    calls only (`reaches_operands`). Raises what the program raises."""
    if not reaches_operands(closed, target):
        return None

    def prefix(*values: Any) -> list:
        return _evaluate_to(closed.jaxpr, list(closed.consts), list(values), target)

    return [np.asarray(v) for v in own_jit(prefix)(*args)]


def _call_body(eqn: Any) -> tuple[Any, list] | None:
    """(jaxpr, consts) an equation of `_CALLS` evaluates on its own operands, else None."""
    if eqn.primitive.name not in _CALLS:
        return None
    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        body = eqn.params.get(key)
        if isinstance(body, _core.ClosedJaxpr):
            body, consts = body.jaxpr, list(body.consts)
        elif isinstance(body, _core.Jaxpr):
            consts = []
        else:
            continue
        if len(body.invars) == len(eqn.invars) and not body.constvars[len(consts):]:
            return body, consts
    return None


def _body_path(jaxpr: Any, target: Any) -> bool:
    for eqn in jaxpr.eqns:
        if eqn is target:
            return True
        body = _call_body(eqn)
        if body is not None and _body_path(body[0], target):
            return True
    return False


def _evaluate_to(jaxpr: Any, consts: list, args: list, target: Any) -> list:
    env, read = evaluation_env(jaxpr, consts, args)
    for eqn in jaxpr.eqns:
        values = [read(v) for v in eqn.invars]
        if eqn is target:
            return values
        body = _call_body(eqn)
        if body is not None and _body_path(body[0], target):
            return _evaluate_to(body[0], body[1], values, target)
        with getattr(getattr(eqn, "ctx", None), "manager", contextlib.nullcontext()):
            out = _bind_as_traced(eqn, values)
        env.update(zip(eqn.outvars, out if eqn.primitive.multiple_results else [out]))
    raise LookupError("the equation is not in this jaxpr")  # `reaches_operands` said it was
