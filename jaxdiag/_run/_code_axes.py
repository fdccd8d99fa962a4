"""The axes a function's code gives its parameters (read, never run): one statement source of `_stated_shapes`.

- `batch, seq, heads, dim = q.shape`: one name per axis of `q`;
- `batch, heads, q_len, dim, v_dim = *q.shape, v.shape[-1]` and `..., k_len, v_dim = *q.shape, *v.shape[-2:]`: a
  starred shape among items of known length (an indexed axis is one, a constant slice its length) has the rest;
- einops patterns: `rearrange(key_mask, 'b j -> j b')` and `map(lambda t: rearrange(t, 'b h n d -> ...'), (q, k,
  v))` state the axes of what they rearrange (a pattern whose input side groups or elides axes states nothing);
- one array named twice at one rank names each of its axes twice (`b` is `batch` in the lines above);
- the same in the module's functions it calls with its parameters (`_flash_attention(q, k, v, mask)` from the
  public wrapper), one call deep, by the positions of the caller's parameters.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

Axes = tuple[str, ...]
EINOPS = ("rearrange", "reduce", "repeat")


def code_axes(fn: Any, depth: int = 1) -> dict[int, Axes]:
    """{position of a parameter of `fn`: axis names} from `fn`'s body, then from the functions it calls."""
    from .._harness.source import function_source

    found = function_source(fn)
    if found is None:
        return {}
    params = [a.arg for a in found.node.args.posonlyargs + found.node.args.args]
    named = _named_axes(found.node)
    out = {params.index(name): axes for name, axes in named.items() if name in params}
    if depth <= 0:
        return out
    for callee, passed in module_calls(fn, found, params):
        for j, axes in code_axes(callee, depth - 1).items():
            if j in passed:
                out.setdefault(passed[j], axes)
    return out


def module_calls(fn: Any, found: Any, params: list[str]) -> Iterator[tuple[Any, dict[int, int]]]:
    """(callee, {its parameter position: `fn`'s}) for each call in `fn`'s source (`found`) of a user function its
    module names, passing it some of `fn`'s parameters (`params`) by name."""
    from .._core import _locate

    scope = getattr(_locate.unwrap(fn), "__globals__", {})
    for call in (n for n in ast.walk(found.node) if isinstance(n, ast.Call)):
        if not isinstance(call.func, ast.Name):
            continue
        callee = scope.get(call.func.id)
        if callee is None or not _locate.is_user_code(callee) or _locate.unwrap(callee) is _locate.unwrap(fn):
            continue
        passed = _passed_params(call, callee, params)
        if passed:
            yield callee, passed


def _passed_params(call: ast.Call, callee: Any, params: list[str]) -> dict[int, int]:
    """{callee's parameter position: caller's parameter position} for the caller's parameters it passes by name."""
    from .._harness.source import function_source, handed_names

    found = function_source(callee)
    if found is None or any(isinstance(a, ast.Starred) for a in call.args):
        return {}
    theirs = [a.arg for a in found.node.args.posonlyargs + found.node.args.args]
    handed = handed_names(call, theirs, params)
    return {theirs.index(inner): params.index(outer) for inner, outer in handed.items() if inner in theirs}


def _named_axes(function: ast.AST) -> dict[str, Axes]:
    """{name: axis names} that the statements of `function` itself give (not its nested functions), in source order;
    the first statement naming it wins, and none after the name is bound again (`q, k, v = map(lambda t:
    rearrange(t, ...), (q, k, v))` states the parameters' axes, a later `*q.shape` those of the rearranged array)."""
    from .._harness.source import own_nodes

    events: list[tuple[tuple[int, int], int, dict[str, Axes], set[str]]] = []
    for node in own_nodes(function):
        if isinstance(node, ast.Assign):
            bound = {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            events.append(((node.end_lineno or node.lineno, node.end_col_offset or 0), 1, {}, bound))
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
                events.append(((node.lineno, node.col_offset), 0, _unpacked(node.targets[0], node.value), set()))
        elif isinstance(node, ast.Call):
            events.append(((node.lineno, node.col_offset), 0, _einops(node), set()))
    every: dict[str, list[Axes]] = {}
    rebound: set[str] = set()
    for _, _, stated, bound in sorted(events, key=lambda e: (e[0], e[1])):
        for name, axes in stated.items():
            if name not in rebound:
                every.setdefault(name, []).append(axes)
        rebound |= bound
    same = _aliases(every)
    return {name: tuple(same.get(a, a) for a in axes[0]) for name, axes in every.items()}


def _aliases(every: dict[str, list[Axes]]) -> dict[str, str]:
    """{axis name: the first name of its axis}: one array named twice at one rank (`batch, heads, n, dim = *q.shape`
    and `rearrange(q, 'b h n d -> ...')`) names each axis twice, and an operand named only the second way (`k`) shares
    the first's axes."""
    first: dict[str, str] = {}

    def root(a: str) -> str:
        while first.get(a, a) != a:
            a = first[a]
        return a

    for statements in every.values():
        for axes in statements[1:]:
            if len(axes) == len(statements[0]):
                for a, b in zip(statements[0], axes):
                    if root(a) != root(b) and not b.isdigit():
                        first[root(b)] = root(a)
    return {a: root(a) for a in first}


def _unpacked(target: ast.Tuple, value: ast.expr) -> dict[str, Axes]:
    names = [t.id for t in target.elts if isinstance(t, ast.Name)]
    if len(names) != len(target.elts):
        return {}
    if _shape_of(value):  # a, b, c = x.shape
        return {_shape_of(value) or "": tuple(names)}
    if not isinstance(value, ast.Tuple):
        return {}
    lengths = [_length(e) for e in value.elts]
    unknown = [i for i, n in enumerate(lengths) if n is None]
    if len(unknown) > 1:
        return {}
    if unknown:
        rest = len(names) - sum(n for n in lengths if n is not None)
        if rest < 1:
            return {}
        lengths[unknown[0]] = rest
    if sum(n or 0 for n in lengths) != len(names):
        return {}
    out: dict[str, Axes] = {}
    start = 0
    for element, n in zip(value.elts, lengths):
        whole = _shape_of(element.value) if isinstance(element, ast.Starred) else None
        if whole and whole not in out:
            out[whole] = tuple(names[start:start + (n or 0)])
        start += n or 0
    return out


def _shape_of(node: ast.expr) -> str | None:
    """`x` for `x.shape`."""
    if isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name):
        return node.value.id
    return None


def _length(element: ast.expr) -> int | None:
    """How many names an item of the unpacked tuple fills: one, unless starred; a starred constant slice of a shape
    its length; any other starred item unknown."""
    if not isinstance(element, ast.Starred):
        return 1
    inner = element.value
    if isinstance(inner, ast.Subscript) and _shape_of(inner.value) and isinstance(inner.slice, ast.Slice):
        lower, upper = _constant(inner.slice.lower), _constant(inner.slice.upper)
        if inner.slice.step is None and lower is not None and lower < 0 and inner.slice.upper is None:
            return -lower  # x.shape[-2:]
        if inner.slice.step is None and inner.slice.lower is None and upper is not None and upper > 0:
            return upper  # x.shape[:2]
    return None


def _constant(node: ast.expr | None) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _constant(node.operand)
        return -inner if inner is not None else None
    return node.value if isinstance(node, ast.Constant) and type(node.value) is int else None


def _einops(call: ast.Call) -> dict[str, Axes]:
    """`rearrange(x, 'b j -> j b')` -> {x: (b, j)}; `map(lambda t: rearrange(t, P), (q, k, v))` -> each of q, k, v."""
    from .._harness.source import called_name

    name = called_name(call.func)
    if name == "map" and len(call.args) == 2 and isinstance(call.args[0], ast.Lambda):
        fn, items = call.args[0], call.args[1]
        body = fn.body
        if (len(fn.args.args) == 1 and isinstance(body, ast.Call) and isinstance(items, (ast.Tuple, ast.List))
                and all(isinstance(e, ast.Name) for e in items.elts)):
            axes = _einops(body).get(fn.args.args[0].arg)
            return {e.id: axes for e in items.elts if isinstance(e, ast.Name)} if axes else {}
        return {}
    if name not in EINOPS or len(call.args) < 2 or not isinstance(call.args[0], ast.Name):
        return {}
    pattern = call.args[1]
    if not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str) and "->" in pattern.value):
        return {}
    left = pattern.value.split("->")[0].split()
    if not left or any(c in token for token in left for c in "()."):
        return {}
    return {call.args[0].id: tuple(left)}
