"""Reading the user's batching rule by AST: its `return` statements and dim variables, so fixes can be written
for their code (`corrected_return` shows the return line with the dims it should have returned).
"""

from __future__ import annotations

import ast
from typing import Any

from ..._harness.source import function_source, own_nodes

# ---------------------------------------------------------------------------------------------------------------
# Reading the user's rule: its return statements and dim variables, for fixes written for their code
# ---------------------------------------------------------------------------------------------------------------


def _function_node(fn: Any) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int, str] | None:
    """(the def node, line offset, dedented source) of a user function (read once, by the harness)."""
    found = function_source(fn)
    return (found.node, found.offset, found.text) if found is not None else None



def _dim_names(fn: Any, fancy: bool | int, n: int) -> list[str]:
    """How the rule names each input's dim: `bd_x` from `bd_x, = batch_dims`, else `batch_dims[i]`. `fancy` is
    the number of arguments before the batched args (a bool for 0 or 1)."""
    return _rule_names(fn, int(fancy) + 1, n, "batch_dims")


def _rule_names(fn: Any, position: int, n: int, default: str) -> list[str]:
    """Names the rule binds to the elements of its parameter at `position` (its args or its dims)."""
    found = _function_node(fn)
    if found is None:
        return [f"{default}[{i}]" for i in range(n)]
    node, _, _ = found
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    param = params[position] if len(params) > position else default
    for sub in own_nodes(node):
        if isinstance(sub, ast.Assign) and len(sub.targets) == 1:
            names = _unpacked_names(sub.targets[0], sub.value, param)
            if names is not None and len(names) == n:
                return names
    return [f"{param}[{i}]" for i in range(n)]


def _unpacked_names(target: ast.AST, value: ast.AST, dims: str) -> list[str] | None:
    """Names bound to the elements of `dims` by `a, b = dims` or `(x,), (bx,) = args, dims`."""
    if isinstance(value, ast.Name) and value.id == dims and isinstance(target, (ast.Tuple, ast.List)):
        names = [e.id for e in target.elts if isinstance(e, ast.Name)]
        return names if len(names) == len(target.elts) else None
    if isinstance(value, ast.Tuple) and isinstance(target, (ast.Tuple, ast.List)) \
            and len(value.elts) == len(target.elts):
        for t, v in zip(target.elts, value.elts):
            inner = _unpacked_names(t, v, dims)
            if inner is not None:
                return inner
    return None


def corrected_return(fn: Any, line: int | None, new_dims: dict[int, str], multiple: bool) -> str | None:
    """The user's `return out, dims` line with the given dims replaced, or None when it is not that shape."""
    if line is None:
        return None
    found = _function_node(fn)
    if found is None:
        return None
    node, offset, source = found
    target = next((r for r in own_nodes(node) if isinstance(r, ast.Return) and r.lineno + offset == line), None)
    if target is None or not isinstance(target.value, ast.Tuple) or len(target.value.elts) != 2:
        return None
    outs, dims = target.value.elts
    if not multiple and isinstance(outs, (ast.List, ast.Tuple)) and len(outs.elts) == 1:
        outs = outs.elts[0]  # `([out], [d])` -> `(out, d)`
        if isinstance(dims, (ast.List, ast.Tuple)) and len(dims.elts) == 1 and 0 not in new_dims:
            new_dims = {0: ast.get_source_segment(source, dims.elts[0]) or ast.unparse(dims.elts[0])}
    outs_text = ast.get_source_segment(source, outs)
    if outs_text is None:
        return None
    if multiple:
        if not isinstance(dims, (ast.Tuple, ast.List)):
            n = len(outs.elts) if isinstance(outs, (ast.Tuple, ast.List)) else len(new_dims)
            if sorted(new_dims) != list(range(n)):
                return None
            dims = ast.Tuple(elts=[ast.Constant(None)] * n)
        items = [ast.get_source_segment(source, e) or ast.unparse(e) for e in dims.elts]
        for k, text in new_dims.items():
            if k < len(items):
                items[k] = text
        opening, closing = ("[", "]") if isinstance(dims, ast.List) else ("(", ")")
        dims_text = opening + ", ".join(items) + ("," if len(items) == 1 and opening == "(" else "") + closing
    else:
        dims_text = new_dims.get(0) or ast.get_source_segment(source, dims) or ast.unparse(dims)
    return f"return {outs_text}, {dims_text}"
