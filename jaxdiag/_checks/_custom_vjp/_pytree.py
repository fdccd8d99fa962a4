"""bwd's result against the primal's real signature when an argument is a pytree (`dense(params: dict, x)`).

A mismatch is reported only where JAX itself rejects the result (`_jax_accepts`): JAX reads bwd's result as a tree
prefix of the arguments, so an array for a whole subtree, or anything for an argument without leaves (`gate=None`),
runs; what such a result does to the gradient is the reference checks' to judge.

The checks run on a flat view with one argument per array leaf; a bwd whose result does not fit the user's
argument trees is handed back unflattened, and comparing it with the leaves would name leaves the user never wrote
("3 differentiable arguments", `dw` paired with `params['b']`). Here the comparison is per positional argument, as
pytrees (the treedef of each argument), and the suggested `return` rebuilds each argument's structure from the names
bwd's own `return` uses, matched to the leaves by shape.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from ... import _compat
from ..._loading._inputs import ArgSpec
from .._gradref import NOT_COMPUTED, GradState, aval_text, quiet_call, return_values, source_of


def layout_of(st: GradState) -> tuple[Any, list[int]] | None:
    """(Layout, argument positions that get cotangents) of a subject checked through a pytree flat view."""
    found = getattr(st.subject.obj, "__jaxdiag_layout__", None)
    return found if isinstance(found, tuple) and len(found) == 2 else None


def structure_text(x: Any) -> str:
    """`{'b': f32[2], 'w': f32[3,2]}`, `(f32[2], f32[3,2])`, `f32[4,3]`: a value as its pytree of avals."""
    if isinstance(x, dict):
        return "{" + ", ".join(f"{k!r}: {structure_text(v)}" for k, v in x.items()) + "}"
    if isinstance(x, tuple):
        return f"({', '.join(structure_text(e) for e in x)}{',' if len(x) == 1 else ''})"
    if isinstance(x, list):
        return f"[{', '.join(structure_text(e) for e in x)}]"
    return aval_text(x)


def kind_text(x: Any) -> str:
    """`a dict with keys b, w`, `a tuple of 2`, `f32[4,3]`: how an argument's structure reads in a sentence."""
    if isinstance(x, dict):
        return f"a dict with keys {', '.join(map(str, x))}"
    if isinstance(x, tuple) and not hasattr(x, "_fields"):
        return f"a tuple of {len(x)}"
    if isinstance(x, list):
        return f"a list of {len(x)}"
    if hasattr(x, "_fields"):
        return f"a {type(x).__name__} ({', '.join(x._fields)})"
    if not hasattr(x, "shape"):
        return f"a {type(x).__name__}"
    return aval_text(x)


def _render(tree: Any) -> str:
    """Source text of a pytree whose leaves are source texts: `{"w": dw, "b": db}`."""
    if isinstance(tree, dict):
        return "{" + ", ".join(f'"{k}": {_render(v)}' if isinstance(k, str) else f"{k!r}: {_render(v)}"
                               for k, v in tree.items()) + "}"
    if isinstance(tree, tuple) and hasattr(tree, "_fields"):
        return f"{type(tree).__name__}({', '.join(_render(e) for e in tree)})"
    if isinstance(tree, tuple):
        return f"({', '.join(_render(e) for e in tree)}{',' if len(tree) == 1 else ''})"
    if isinstance(tree, list):
        return f"[{', '.join(_render(e) for e in tree)}]"
    return str(tree)


def _returned_pieces(st: GradState, result: Any) -> list[tuple[str, tuple[int, ...]]] | None:
    """(source text, shape) of every array bwd returned, when its single `return` is a flat tuple of expressions
    whose results are arrays (`return dw, db, dx`) or a tuple nesting such tuples/dicts."""
    values = return_values(st.bwd)
    if len(values) != 1:
        return None
    pieces: list[tuple[str, tuple[int, ...]]] = []

    def walk(node: ast.expr, value: Any) -> bool:
        if isinstance(node, (ast.Tuple, ast.List)) and isinstance(value, (tuple, list)) \
                and len(node.elts) == len(value):
            return all(walk(n, v) for n, v in zip(node.elts, value))
        if isinstance(node, ast.Dict) and isinstance(value, dict) and len(node.values) == len(value):
            return all(walk(n, v) for n, v in zip(node.values, value.values()))
        if value is None:
            return True
        if not hasattr(value, "shape"):
            return False
        pieces.append((source_of(node), tuple(np.shape(value))))
        return True

    return pieces if walk(values[0], result) else None


def suggested_return(st: GradState, layout: Any, diff_args: Sequence[int], result: Any, args: Sequence[Any],
                     names: Sequence[str]) -> tuple[str, list[str]] | None:
    """(`return ({"b": db, "w": dw}, dx)`, the leaves bwd does not compute): each differentiable argument's tree
    with bwd's own expressions as leaves, matched by shape in the order bwd returned them; a leaf without a match
    gets a placeholder name (`db`). None when bwd's return cannot be read or an expression fits no leaf."""
    pieces = _returned_pieces(st, result)
    if pieces is None:
        return None
    unused = list(pieces)
    entries, missing = [], []
    for position in diff_args:
        arg = args[position]
        leaves, treedef = jax.tree_util.tree_flatten(arg)
        placeholders = _placeholder_names(names[position], arg)
        texts = []
        for leaf, template, placeholder in zip(leaves, layout.arg_leaves[position], placeholders):
            if not isinstance(template, ArgSpec):
                texts.append("None")
                continue
            match = [p for p in unused if p[1] == tuple(np.shape(leaf))]
            # several leaves of one shape: the expression named after the leaf (`dw` for params["w"]) first
            match.sort(key=lambda p: p[0] not in (placeholder, placeholder[1:], f"grad_{placeholder[1:]}"))
            if not match:
                texts.append(placeholder)
                missing.append(placeholder)
                continue
            unused.remove(match[0])
            texts.append(match[0][0])
        entries.append(_render(jax.tree_util.tree_unflatten(treedef, texts)))
    if unused:
        return None
    return f"return ({', '.join(entries)}{',' if len(entries) == 1 else ''})", missing


def pytree_mismatch(st: GradState, g: Any, bwd: str) -> tuple[str, str] | None:
    """(what is wrong, the fix) in the user's terms when the user's bwd, called as JAX calls it with cotangent `g`,
    returns something that does not match the primal's argument trees; None when it does (or the subject takes
    plain arrays, or bwd raises: reported elsewhere)."""
    found = layout_of(st)
    if found is None or st.memo.fwd is NOT_COMPUTED or st.subject.original is None:
        return None
    layout, diff_args = found
    args = layout.build([a.value for a in st.args])
    user_bwd = getattr(st.bwd, "__wrapped__", None)
    nondiff = _compat.custom_vjp_parts(st.subject.original)[3]
    if user_bwd is None:
        return None
    result, exc = quiet_call(user_bwd, *[args[i] for i in nondiff], st.memo.fwd[1], g)
    if exc is not None:
        return None
    names = [layout.names[i] if i < len(layout.names) else f"argument {i}" for i in range(len(args))]
    described = "; ".join(f"{names[i]} is {kind_text(args[i])}" for i in diff_args)
    n = len(diff_args)
    problems: list[str] = []
    if not isinstance(result, (tuple, list)):
        problems.append(f"{bwd} returned {structure_text(result)}, not a tuple with one entry per argument")
    elif len(result) != n:
        problems.append(f"{bwd} returned {len(result)} entries, {structure_text(result)}, for {n} argument"
                        f"{'s' if n != 1 else ''}")
    else:
        for position, ct in zip(diff_args, result):
            # an argument without array leaves (None, an empty tuple: an optional input not given) has nothing to
            # differentiate, and JAX ignores whatever bwd returns for it (tree prefix matching)
            if jax.tree_util.tree_leaves(args[position]) and layout.flatten_cotangent(position, ct) is None:
                problems.append(f"the entry for {names[position]} is {structure_text(ct)} where {names[position]} "
                                f"is {kind_text(args[position])}")
    if not problems or _jax_accepts(st.subject.original, args, diff_args):
        return None
    arg_list = ", ".join(names[i] for i in diff_args)
    message = (f"{'; '.join(problems)}. The primal takes {n} differentiable positional argument"
               f"{'s' if n != 1 else ''} ({arg_list}): {described}; bwd returns one cotangent per argument with that "
               "argument's pytree structure (the same dict keys, tuple lengths)")
    meant = suggested_return(st, layout, diff_args, result, args, names)
    if meant is not None:
        text, missing = meant
        todo = f" ({', '.join(missing)}: not computed by {bwd} yet)" if missing else ""
        return message, f"Return the cotangents with the arguments' structure: `{text}`{todo}."
    shape = ", ".join(_render(jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(args[i]),
                                                           _placeholder_names(names[i], args[i])))
                      for i in diff_args)
    return message, (f"Return `({shape}{',' if n == 1 else ''})`: one entry per positional argument, each with that "
                     "argument's pytree structure (None for an argument without gradient).")


def _jax_accepts(original: Any, args: Sequence[Any], diff_args: Sequence[int]) -> bool:
    """Whether JAX takes bwd's result for the user's argument trees after all: it matches them as a tree prefix, so
    one array stands for every leaf of an argument's subtree (broadcast to each, where the shapes fit) and an entry
    for an argument without leaves is ignored. Traced only (`jax.eval_shape` of the VJP at the example's types):
    where the trace fails for another reason, the mismatch stands."""
    def pullback() -> Any:
        def fn(*diffs: Any) -> Any:
            full = list(args)
            for position, value in zip(diff_args, diffs):
                full[position] = value
            return original(*full)

        out, vjp = jax.vjp(fn, *[args[i] for i in diff_args])
        return vjp(jax.tree_util.tree_map(_unit_cotangent, out))

    _, exc = quiet_call(jax.eval_shape, pullback)
    return exc is None


def _unit_cotangent(leaf: Any) -> Any:
    dtype = np.dtype(leaf.dtype)
    if dtype.kind in "fc":
        return jax.numpy.ones(leaf.shape, dtype)
    return np.zeros(leaf.shape, jax.dtypes.float0)


def _placeholder_names(name: str, arg: Any) -> list[str]:
    """Per leaf of an argument, a cotangent name: `db`, `dw` for a dict's keys, `dx` for an array `x`."""
    out = []
    for path, _ in jax.tree_util.tree_flatten_with_path(arg)[0]:
        last = path[-1] if path else None
        key = getattr(last, "key", getattr(last, "name", getattr(last, "idx", None)))
        out.append(f"d{key}" if isinstance(key, str) and key.isidentifier()
                   else f"d{name}_{key}" if key is not None else f"d{name}")
    return out
