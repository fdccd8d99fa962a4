"""Where each output's batch axis really is, measured: for a rule call that saw concrete arrays, try every axis of
the returned output (and None) against the per-example reference, and keep the one whose values match.

Shapes alone cannot tell a swapped axis from the batch axis when sizes coincide, nor a rule that kept the axis but
computed the wrong values from one that put it elsewhere; values can. `WRONG_VALUES` means no axis (and not None)
reproduces the per-example results: the rule computes something else, and no dim will fix it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import _compat
from ..._loading import _numerics
from .._vmap_harness import Reference
from ..._harness.source import called_name
from ._spy import RuleCall


class _WrongValues:
    def __repr__(self) -> str:
        return "WRONG_VALUES"


WRONG_VALUES: Any = _WrongValues()


def measured_dims(call: RuleCall, reference: Reference) -> list[Any] | None:
    """Per output of `call`: the axis carrying the batch (int), None (the same for every example), or WRONG_VALUES;
    None when the call cannot be measured (traced values, nested vmap, no reference, malformed return)."""
    if not call.top or not call.variant.concrete or call.variant.mode == "nested" or call.size is None:
        return None
    result = call.result
    if not isinstance(result, (tuple, list)) or len(result) != 2:
        return None
    outs = list(result[0]) if call.prim.multiple_results else [result[0]]
    if call.prim.multiple_results and not isinstance(result[0], (tuple, list)):
        return None
    expected = reference.expected(call.variant)
    if isinstance(expected, BaseException) or len(expected) != len(outs):
        return None
    if any(_compat.is_tracer(o) for o in outs):  # traced values: not measurable
        return None
    arrays = [np.asarray(o) for o in outs]
    return [_measure(out, exp, call.size) for out, exp in zip(arrays, expected)]


def _measure(out: np.ndarray, expected: np.ndarray, size: int) -> Any:
    for d in range(out.ndim):
        if out.shape[d] != size:
            continue
        moved = np.moveaxis(out, d, 0)
        if moved.shape == expected.shape and _numerics.compare(moved, expected).ok:
            return d
    if out.shape == expected.shape[1:] and all(_numerics.compare(out, e).ok for e in expected):
        return None
    return WRONG_VALUES


# ---------------------------------------------------------------------------------------------------------------
# What the rule's source actually does, so advice names only constructs that are there
# ---------------------------------------------------------------------------------------------------------------

_REDUCTIONS = {"sum", "mean", "max", "min", "prod", "argmax", "argmin", "any", "all", "norm", "std", "var",
               "logsumexp", "reduce_sum", "reduce_max", "reduce_min", "cumsum", "cumprod"}
_AXIS_MOVERS = {"swapaxes", "moveaxis", "transpose", "rollaxis", "squeeze", "expand_dims", "reshape"}


def rule_constructs(fn: Any) -> dict[str, str]:
    """{'index': 'x[0]', 'reduction': 'jnp.sum(x * x, axis=axes)', 'axis_move': 'jnp.swapaxes(...)'}: the first
    source text of each kind found in the rule's own body."""
    import ast

    from ..._harness.source import own_nodes as _own_nodes
    from ._source import _function_node

    found = _function_node(fn) if fn is not None else None
    if found is None:
        return {}
    node, _, source = found
    out: dict[str, str] = {}
    for sub in _own_nodes(node):
        if isinstance(sub, ast.Subscript) and "index" not in out:
            index = sub.slice
            constant = isinstance(index, ast.Constant) and isinstance(index.value, int) or (
                isinstance(index, ast.Tuple) and any(isinstance(e, ast.Constant) and isinstance(e.value, int)
                                                     for e in index.elts))
            if constant and not _is_dims_access(sub):
                out["index"] = ast.get_source_segment(source, sub) or ast.unparse(sub)
        if isinstance(sub, ast.Call):
            name = called_name(sub.func) or ""
            kind = "reduction" if name in _REDUCTIONS else "axis_move" if name in _AXIS_MOVERS else None
            if kind == "axis_move" and name == "moveaxis" and len(sub.args) >= 3 and ast.unparse(sub.args[2]) == "0":
                kind = None  # moving the batch axis to the front is the usual first step, not a suspect
            if kind and kind not in out:
                text = ast.get_source_segment(source, sub) or ast.unparse(sub)
                out[kind] = text if len(text) <= 60 else text[:57] + "..."
    return out


def _is_dims_access(node: Any) -> bool:
    """`batch_dims[0]`, `batched_args[0]`, `x.shape[0]`: reading the rule's arguments, not slicing an example."""
    import ast

    value = node.value
    text = ast.unparse(value)
    return text.endswith(("shape", "dims", "args", "batch_dims", "batched_args", "axes")) or isinstance(
        value, ast.Name) and value.id in ("batch_dims", "batched_args", "dims", "args", "vals", "axes")
