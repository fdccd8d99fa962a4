"""The parameters a target's own code uses as truth values (`jnp.any(x)`, `~mask`, `lax.select(pred, ...)`):
inference draws booleans there first, as a float draw turns a mask into a constant."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .. import _compat
from .._checks._base import Subject


# Calls whose first argument is a truth value: an operand the target's own code passes there is a boolean (a mask,
# a stop flag), which a float draw turns into a constant (every random float is nonzero, so `any` is always True).
_PREDICATE_CALLS = {"any", "all", "logical_not", "logical_and", "logical_or", "logical_xor", "where"}
# ... and those only as `lax.<name>` (`jnp.linalg.cond(a)` is a condition number, `jnp.select` takes lists)
_LAX_PREDICATE_CALLS = {"select", "cond"}


def predicate_positions(subject: Subject) -> set[int]:
    """Positions of the parameters the target's own code uses as truth values: the first argument of `jnp.any`,
    `jnp.all`, `jnp.logical_*`, `jnp.where`, `lax.select` or `lax.cond`, or the operand of `~` / `not` (for a
    primitive, in its impl). Inference draws booleans there."""
    obj = subject.original if subject.original is not None else subject.obj
    fn = _compat.impl(obj) if subject.kind == "primitive" else getattr(obj, "fun", None) or obj
    from .._harness.source import function_source

    found = function_source(fn) if fn is not None else None
    if found is None:
        return set()
    names = [a.arg for a in found.node.args.posonlyargs + found.node.args.args]
    used = {n.id for n in _predicate_operands(found.node)}
    return {i for i, name in enumerate(names) if name in used}


def _predicate_operands(node: ast.AST) -> Iterator[ast.Name]:
    from .._harness.source import called_name

    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and sub.args and (called_name(sub.func) in _PREDICATE_CALLS or (
                called_name(sub.func) in _LAX_PREDICATE_CALLS and isinstance(sub.func, ast.Attribute)
                and called_name(sub.func.value) == "lax")):
            first = sub.args[0]
        elif isinstance(sub, ast.UnaryOp) and isinstance(sub.op, (ast.Invert, ast.Not)):
            first = sub.operand
        else:
            continue
        if isinstance(first, ast.Name):
            yield first
