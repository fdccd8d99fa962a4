"""The tangents a subject's callers can give it (`contract_tangents`): symmetric steps for a matrix on the spd
domain, and none for a primitive's operand that its package never differentiates, because every `prim.bind(...)`
of the package passes a value computed through `stop_gradient` (read, never run: `stopped_operands`).

A surrogate-gradient spike function binds `heaviside_p.bind(x, dx)` with `dx = self.surrogate_grad(
jax.lax.stop_gradient(x))`: JAX never gives `dx` a tangent there, so its JVP rule adding `tdx` to a tangent of
another shape is never reached, and `jax.vjp` of a vmap that batches `x` only is no program of the package's.
Checked with a float tangent for `dx`, the rule fails (JXB018) on inputs no caller makes. Such an operand is
`Subject.unperturbed`, as one its call site leaves unperturbed when a function is checked (`_call_site`).

Binds inside the primitive's own rules (a batching rule binding it again on moved operands) are not the package's
call sites and are skipped. Conservative: a value that flows around the `stop_gradient` (`dx = g(stop_gradient(x))
+ x`), a name assigned a second time in any other way, or any site passing it differently keeps it perturbed.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from .. import _compat
from .._checks._base import Subject
from .._loading._inputs import is_square, symmetric_directions

STOPPERS = {"stop_gradient"}


def contract_tangents(subject: Subject, seed: int) -> None:
    """On the spd domain, a square matrix argument is perturbed along symmetric (Hermitian) directions only, as the
    tangents a nested rule receives are (`Subject.received_tangents`: a random direction leaves the domain); a
    primitive's operand that every bind site of its package stop-gradients, never (`Subject.unperturbed`; unless that
    is every float operand: nothing would be checked)."""
    rng = np.random.default_rng([seed, 0x5BD])
    for i, spec in enumerate(subject.specs):
        if (spec.domain or subject.domain) == "spd" and is_square(spec.shape) and spec.is_inexact:
            subject.received_tangents.setdefault(i, symmetric_directions(spec, rng, 6))
    stopped = stopped_operands(subject)
    if not {i for i, s in enumerate(subject.specs) if getattr(s, "is_inexact", False)} <= stopped:
        subject.unperturbed |= stopped


def stopped_operands(subject: Subject) -> frozenset[int]:
    """Operand positions every bind site of the package passes a `stop_gradient`-computed value."""
    if subject.kind != "primitive" or subject.parent is not None:
        return frozenset()
    from .._harness.source import called_name
    from .._loading._passthrough import bind_calls
    from ._signature import bind_sources

    own = {getattr(r, "__name__", None) for r in _compat.registered_rules(subject.obj).values() if r is not None}
    found: set[int] | None = None
    for _, caller, call in bind_calls(*bind_sources(subject)):
        if isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)) and caller.name in own:
            continue  # the primitive's own rule binding it again
        if caller is None or any(isinstance(a, ast.Starred) for a in call.args):
            return frozenset()
        here = {j for j, arg in enumerate(call.args) if _stopped(arg, caller, called_name)}
        found = here if found is None else found & here
    return frozenset(found or ())


def _stopped(arg: ast.expr, caller: ast.AST, called_name: Any) -> bool:
    """Whether the value passed is computed through `stop_gradient`: the expression itself, or a name every binding
    of which in the caller is a plain assignment of such an expression (a parameter of that name, or one bound
    otherwise too, by unpacking, a loop, `+=`, `:=`, may carry a value from elsewhere)."""
    from .._harness.source import plain_assignments

    if not isinstance(arg, ast.Name):
        return _through_stopper(arg, called_name)
    values = plain_assignments(caller, arg.id)
    parameter = any(isinstance(n, ast.arg) and n.arg == arg.id for n in ast.walk(caller))
    return bool(values) and not parameter and all(_through_stopper(v, called_name) for v in values or ())


def _through_stopper(expr: ast.expr, called_name: Any) -> bool:
    """Whether `expr` calls `stop_gradient` and reads no variable outside its argument (the functions it calls
    aside)."""
    stopped = False
    stack: list[ast.AST] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            if called_name(node.func) in STOPPERS:
                stopped = True
                continue
            stack.extend([*node.args, *(k.value for k in node.keywords)])  # not the callee: `self.f(...)`, `jnp.f`
            continue
        if isinstance(node, ast.Name):
            return False
        stack.extend(ast.iter_child_nodes(node))
    return stopped
