"""`lax.custom_linear_solve` and `lax.custom_root`: their calls inside a function, as JAX records them.

Both are custom derivative rules written as functions: the gradient of `custom_linear_solve(matvec, b, solve,
transpose_solve)` assumes that `solve` inverts `matvec` and `transpose_solve` inverts its transpose, and the
gradient of `custom_root(f, x0, solve, tangent_solve)` assumes that `solve` finds a root of `f` and
`tangent_solve(g, y)` solves the linearized system `g(x) = y`. JAX never checks either.

A linear solve is one `custom_linear_solve` equation whose params hold the traced jaxprs (matvec, vecmat, solve,
transpose_solve) and how many of its operands are each one's constants; a root is a call of JAX's own custom_jvp
`_custom_root(const_lengths, jaxprs, *consts, *guess)` with the traced f, solve and tangent_solve. Each traced
jaxpr carries the user's function it came from (its debug info: `name at path:line`), which is where a finding
about it belongs. Both JAX 0.5 and newer releases keep these names and layouts.
"""

from __future__ import annotations

import contextlib
import functools
import re
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ContextManager

from jax._src import core as _core

from ._base import custom_jvp_type

Guard = Callable[[str], ContextManager[None]]

LINEAR_SOLVE_PRIMITIVE = "custom_linear_solve"
_ROOT_FUNCTION = "_custom_root"
_SOLVES_MODULE = "jax._src.lax.control_flow.solves"


@dataclass
class SolveCall:
    """One `custom_linear_solve` or `custom_root` call: its traced functions by role, each role's constants, the
    right-hand side `b` (linear) or the initial guess (root), and where the user's code made the call.

    Roles: linear `matvec`, `vecmat` (the transpose JAX traced, or matvec itself with symmetric=True), `solve`,
    `transpose_solve` (None when not given); root `f`, `solve`, `l_and_s` (tangent_solve applied to the
    linearization of f: takes x then y). `concrete` is False when the call was made on tracers (inside a loop body
    being traced): its constants are then avals, not values."""

    kind: str  # "linear" or "root"
    jaxprs: dict[str, Any]
    consts: dict[str, list[Any]]
    operand: list[Any]
    symmetric: bool = False
    concrete: bool = True
    stack: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, function), outermost first


def jaxpr_source(closed: Any) -> tuple[str, str, int] | None:
    """(function name, file, def line) of the user's function a traced jaxpr came from, from its debug info."""
    jaxpr = getattr(closed, "jaxpr", closed)
    info = getattr(jaxpr, "debug_info", None)
    text = getattr(info, "func_src_info", None)
    if not isinstance(text, str):
        return None
    match = re.fullmatch(r"(.*) at (.+):(\d+)", text.strip())
    if match is None:
        return None
    return match.group(1), match.group(2), int(match.group(3))


def is_custom_root(obj: Any) -> bool:
    """JAX's `_custom_root` custom_jvp, which `lax.custom_root` calls."""
    fun = getattr(obj, "fun", None)
    return (isinstance(obj, custom_jvp_type) and getattr(fun, "__name__", "") == _ROOT_FUNCTION
            and getattr(fun, "__module__", "") == _SOLVES_MODULE)


def is_linear_solve_eqn(eqn: Any) -> bool:
    return getattr(eqn.primitive, "name", None) == LINEAR_SOLVE_PRIMITIVE and "jaxprs" in eqn.params


def _split(args: list[Any], lengths: Any) -> tuple[dict[str, list[Any]], list[Any]]:
    out: dict[str, list[Any]] = {}
    start = 0
    for role, n in zip(lengths._fields, lengths):
        out[role] = list(args[start:start + int(n)])
        start += int(n)
    return out, list(args[start:])


def linear_solve_call(args: list[Any], params: dict[str, Any], concrete: bool) -> SolveCall:
    jaxprs = params["jaxprs"]
    consts, b = _split(list(args), params["const_lengths"])
    roles = dict(zip(jaxprs._fields, jaxprs))
    symmetric = roles.get("vecmat") is not None and roles.get("vecmat") is roles.get("matvec")
    return SolveCall("linear", roles, consts, b, symmetric=symmetric, concrete=concrete)


def root_call(args: tuple, concrete: bool) -> SolveCall | None:
    if len(args) < 2 or not hasattr(args[0], "_fields") or not hasattr(args[1], "_fields"):
        return None
    lengths, jaxprs = args[0], args[1]
    consts, guess = _split(list(args[2:]), lengths)
    return SolveCall("root", dict(zip(jaxprs._fields, jaxprs)), consts, guess, concrete=concrete)


def solve_calls_in(jaxpr: Any, custom_calls: list) -> list[SolveCall]:
    """The solves a traced function makes (abstract: operands are avals): its `custom_linear_solve` equations,
    nested ones included, and its recorded `_custom_root` calls."""
    from ._jaxprs import iter_eqns

    out = []
    for eqn in iter_eqns(jaxpr) if jaxpr is not None else []:
        if is_linear_solve_eqn(eqn):
            out.append(linear_solve_call([v.aval for v in eqn.invars], eqn.params, concrete=False))
    for obj, args, _ in custom_calls:
        if is_custom_root(obj):
            call = root_call(tuple(args), concrete=False)
            if call is not None:
                out.append(call)
    return out


def _concrete(args: Any) -> bool:
    return not any(isinstance(a, _core.Tracer) for a in args)


def _stack() -> list[tuple[str, int, str]]:
    return [(f.filename, f.lineno or 0, f.name) for f in traceback.extract_stack()]


@contextlib.contextmanager
def record_solves(seen: list[SolveCall], guard: Guard) -> Iterator[None]:
    """Record every custom_linear_solve / custom_root call made while the body runs (values when the call is eager,
    as under `jax.disable_jit()`). `Primitive.bind` and custom_jvp's `__call__` are restored on exit, even on
    error."""
    original_bind = _core.Primitive.bind
    original_call = custom_jvp_type.__dict__["__call__"]

    def recording_bind(self: Any, *args: Any, **params: Any) -> Any:
        if getattr(self, "name", None) == LINEAR_SOLVE_PRIMITIVE and "jaxprs" in params:
            with guard("recording a custom_linear_solve call"):
                call = linear_solve_call(list(args), params, _concrete(args))
                call.stack = _stack()
                seen.append(call)
        return original_bind(self, *args, **params)

    @functools.wraps(original_call)
    def recording_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if is_custom_root(self):
            with guard("recording a custom_root call"):
                call = root_call(args, _concrete(args[2:]))
                if call is not None:
                    call.stack = _stack()
                    seen.append(call)
        return original_call(self, *args, **kwargs)

    try:
        _core.Primitive.bind = recording_bind  # type: ignore[method-assign]  # the patch, undone in finally
        custom_jvp_type.__call__ = recording_call  # type: ignore[method-assign]  # the patch, undone in finally
        yield
    finally:
        _core.Primitive.bind = original_bind  # type: ignore[method-assign]  # the patch, undone in finally
        custom_jvp_type.__call__ = original_call  # type: ignore[method-assign]  # the patch, undone in finally
