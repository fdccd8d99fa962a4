"""Real signatures seen by the checks as flat lists of arrays.

A target's positional arguments may be static values (`lo` in `clip_gradient(lo, hi, x)`), PRNG keys and pytrees
(`{"w": f32[3,4], "b": f32[4]}`). The checks work on a flat list of arrays: they draw, batch, perturb and compare
each array on its own. A `Layout` maps between the two: it holds the argument tree, whose leaves are `ArgSpec`s
(arrays and keys, the checks' inputs, in order) and `Static`s (passed as-is, never batched or differentiated).

When the arguments are not all plain arrays and top-level statics, the subject is checked through a *flat view*:
a function, custom_vjp or custom_jvp of the array leaves only, which rebuilds the user's arguments and calls the
user's own `fun`/`fwd`/`bwd`/`jvp`. Static leaves are closed over, keys are wrapped from raw key data, and the
views carry `__wrapped__` so findings point at the user's rules.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import jax
import numpy as np

from .. import _compat
from ._inputs import ArgSpec, Static, key_data_shape, spec_of, static_text, template_text


def _is_leaf(x: Any) -> bool:
    return isinstance(x, (ArgSpec, Static))


def _path_text(tree: Any, path: tuple[Any, ...]) -> str:
    """`keystr` of a leaf's path, a class's flattened child named by the attribute holding it (a sparse matrix's
    `.data`, where `keystr` says `[<flat index 0>]`)."""
    text, node = "", tree
    for key in path:
        child = next(sub for sub_path, sub in jax.tree_util.tree_flatten_with_path(
            node, is_leaf=lambda x, node=node: x is not node)[0] if sub_path == (key,))
        named = [name for name, value in getattr(node, "__dict__", {}).items() if value is child] \
            if isinstance(key, jax.tree_util.FlattenedIndexKey) else []
        text += f".{named[0]}" if len(named) == 1 else jax.tree_util.keystr((key,))
        node = child
    return text


@dataclass
class Layout:
    """The positional arguments as one tree: per argument its treedef and its leaves (ArgSpec or Static)."""

    arg_defs: list[Any]
    arg_leaves: list[list[Any]]
    names: list[str] = field(default_factory=list)  # parameter names, for readable leaf names

    @classmethod
    def from_templates(cls, templates: Sequence[Any], names: Sequence[str] = ()) -> "Layout":
        defs, leaves = [], []
        for t in templates:
            flat, treedef = jax.tree_util.tree_flatten(t, is_leaf=_is_leaf)
            defs.append(treedef)
            leaves.append(list(flat))
        return cls(defs, leaves, list(names))

    @classmethod
    def from_values(cls, values: Sequence[Any], names: Sequence[str] = ()) -> "Layout":
        """The layout of real arguments (a recorded or traced call): arrays and keys become specs, the rest static."""
        return cls.from_templates([template_of(v) for v in values], names)

    # -- views ----------------------------------------------------------------------------------------------

    @property
    def specs(self) -> list[ArgSpec]:
        return [leaf for leaves in self.arg_leaves for leaf in leaves if isinstance(leaf, ArgSpec)]

    @property
    def plain(self) -> bool:
        """Every argument a plain array or a top-level static: the subject needs no flat view."""
        return all(len(leaves) == 1 and treedef.num_nodes == 1
                   and (isinstance(leaves[0], Static) or leaves[0].key is None)
                   for treedef, leaves in zip(self.arg_defs, self.arg_leaves))

    def static_positions(self) -> dict[int, Any]:
        """For a plain layout: the positions of static arguments and their values."""
        return {i: leaves[0].value for i, leaves in enumerate(self.arg_leaves)
                if len(leaves) == 1 and isinstance(leaves[0], Static)}

    def texts(self) -> list[str]:
        """One --arg text per positional argument (`-0.1`, `{'w': f32[3,4]}`, `key[]`)."""
        return [template_text(jax.tree_util.tree_unflatten(d, leaves))
                for d, leaves in zip(self.arg_defs, self.arg_leaves)]

    def leaf_names(self) -> list[str]:
        """A readable name per array leaf: `params['w']`, `x`, `args[1][0]`."""
        out = []
        for i, (treedef, leaves) in enumerate(zip(self.arg_defs, self.arg_leaves)):
            base = self.names[i] if i < len(self.names) else f"argument {i}"
            tree = jax.tree_util.tree_unflatten(treedef, leaves)
            paths = [p for p, _ in jax.tree_util.tree_flatten_with_path(tree, is_leaf=_is_leaf)[0]]
            for path, leaf in zip(paths, leaves):
                if isinstance(leaf, ArgSpec):
                    out.append(base + _path_text(tree, path))
        return out

    def spec_positions(self) -> list[list[int]]:
        """Per argument, the indices (into `specs`) of its array leaves."""
        out, n = [], 0
        for leaves in self.arg_leaves:
            count = sum(isinstance(leaf, ArgSpec) for leaf in leaves)
            out.append(list(range(n, n + count)))
            n += count
        return out

    # -- building the user's arguments ------------------------------------------------------------------------

    def build(self, arrays: Sequence[Any], tangents: bool = False) -> tuple:
        """The user's positional arguments from one array per spec (keys wrapped, statics put back).

        `tangents=True` builds tangents instead: a key's tangent is a float0 zero of the key's shape."""
        it = iter(arrays)
        args = []
        for treedef, leaves in zip(self.arg_defs, self.arg_leaves):
            filled = [_fill(leaf, it, tangents) for leaf in leaves]
            args.append(jax.tree_util.tree_unflatten(treedef, filled))
        return tuple(args)

    def flatten_cotangent(self, position: int, ct: Any) -> list[Any] | None:
        """A cotangent for argument `position` as one entry per array leaf, or None if JAX rejects its structure.
        JAX reads bwd's result as a tree prefix of the arguments: an entry (None included) stands for every leaf of
        the subtree it sits over, so one array serves a whole subtree and an entry over a subtree without leaves
        (`gate=None`) is dropped."""
        definition = self.arg_defs[position]
        dummy = jax.tree_util.tree_unflatten(definition, [object()] * definition.num_leaves)
        parts: list[Any] = []

        def spread(entry: Any, subtree: Any) -> None:
            parts.extend([entry] * len(jax.tree_util.tree_leaves(subtree)))

        try:
            jax.tree_util.tree_map(spread, ct, dummy, is_leaf=lambda x: x is None)
        except (ValueError, TypeError):
            return None
        return [part for part, leaf in zip(parts, self.arg_leaves[position]) if isinstance(leaf, ArgSpec)]


def _fill(leaf: Any, arrays: Any, tangents: bool) -> Any:
    if isinstance(leaf, Static):
        return leaf.value
    value = next(arrays)
    if leaf.key is None:
        return value
    if tangents:
        return np.zeros(leaf.shape[:len(leaf.shape) - len(key_data_shape(leaf.key))], dtype=jax.dtypes.float0)
    if _compat.is_tracer(value) or hasattr(value, "shape"):
        if getattr(value, "dtype", None) is not None and jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
            return value  # already a key (symbolic-zero wrappers pass through)
        return jax.random.wrap_key_data(value, impl=leaf.key)
    return value


def template_of(value: Any) -> Any:
    """The template of a real argument: arrays and keys become specs, other leaves static."""
    def leaf(x: Any) -> Any:
        if isinstance(x, type) or (isinstance(getattr(x, "dtype", None), np.dtype) and not hasattr(x, "shape")):
            # a scalar type as a static argument (`jnp.float8_e4m3fn`, `np.float32`): passed on as its dtype
            # (equivalent wherever JAX takes a dtype), so it is written and replayed as `float8_e4m3fn`
            scalar = _scalar_dtype(x)
            return Static(scalar if scalar is not None else x)
        dtype = getattr(x, "dtype", None)
        if dtype is not None and hasattr(x, "shape"):
            if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
                impl = str(jax.random.key_impl(x)) if not _compat.is_tracer(x) else _tracer_key_impl(x)
                from ._inputs import key_spec

                return key_spec(tuple(x.shape), impl)
            try:
                return ArgSpec(np.dtype(dtype), tuple(int(d) for d in x.shape))
            except TypeError:
                return Static(x)
        if isinstance(x, np.generic):
            return spec_of(x)
        return Static(x)

    return jax.tree_util.tree_map(leaf, value)


def _scalar_dtype(x: Any) -> np.dtype | None:
    """The dtype a scalar type stands for (`np.float32`, jax.numpy's `float8_e4m3fn`), else None."""
    if isinstance(x, type) and issubclass(x, np.generic):
        return np.dtype(x)
    dtype = getattr(x, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) else None


def _tracer_key_impl(x: Any) -> str:
    try:
        return str(x.dtype._impl.name)
    except AttributeError:
        from ._inputs import default_key_impl

        return default_key_impl()


def describe_static(value: Any) -> str:
    return static_text(value)


# ---------------------------------------------------------------------------------------------------------------
# Flat views
# ---------------------------------------------------------------------------------------------------------------


def _named(fn: Callable, original: Any, names: list[str]) -> Callable:
    """Mark a view: `__wrapped__` for locations, leaf names for messages, a signature of identifiers."""
    fn.__name__ = getattr(original, "__name__", "function")
    fn.__qualname__ = getattr(original, "__qualname__", fn.__name__)
    vars(fn).update(__wrapped__=original, __jaxdiag_arg_names__=list(names), __signature__=inspect.Signature(
        [inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(len(names))]))
    return fn


def flat_view(kind: str, obj: Any, layout: Layout) -> Any:
    """`obj` as a function (or custom_vjp/custom_jvp) of the layout's array leaves."""
    if kind == "custom_vjp":
        return _flat_custom_vjp(obj, layout)
    if kind == "custom_jvp":
        return _flat_custom_jvp(obj, layout)
    names = layout.leaf_names()

    def call(*arrays: Any) -> Any:
        return obj(*layout.build(arrays))

    return _named(call, obj, names)


def _nondiff_split(layout: Layout, nondiff: Sequence[int]) -> tuple[list[int], list[int]]:
    """(flat positions of array leaves in nondiff arguments, the argument positions that get cotangents)."""
    positions = layout.spec_positions()
    flat_nondiff = sorted(i for a in nondiff if a < len(positions) for i in positions[a])
    diff_args = [a for a in range(len(positions)) if a not in set(nondiff)]
    return flat_nondiff, diff_args


def _merge(flat_nondiff: list[int], nondiff_values: Sequence[Any], others: Sequence[Any]) -> list[Any]:
    """All flat arrays in order, from the nondiff ones and the rest."""
    out: list[Any] = []
    nd, rest = iter(nondiff_values), iter(others)
    for i in range(len(flat_nondiff) + len(others)):
        out.append(next(nd) if i in flat_nondiff else next(rest))
    return out


def _flat_custom_vjp(obj: Any, layout: Layout) -> Any:
    fun, fwd, bwd, nondiff, symbolic_zeros = _compat.custom_vjp_parts(obj)
    if fwd is None or bwd is None:  # defvjp never called: checked as is, JAX reports the missing rule
        return obj
    flat_nondiff, diff_args = _nondiff_split(layout, nondiff)
    n_specs = len(layout.specs)
    names = layout.leaf_names()

    def full(arrays: Sequence[Any]) -> tuple:
        return _compat.resolve_positional(fun, layout.build(arrays))

    def flat_fun(*arrays: Any) -> Any:
        return fun(*full(arrays))

    def flat_fwd(*arrays: Any) -> Any:
        return fwd(*full(arrays))

    def flat_bwd(*rest: Any) -> Any:
        k = len(flat_nondiff)
        nd_values, res, g = rest[:k], rest[k], rest[k + 1]
        placeholders = _merge(flat_nondiff, nd_values, [None] * (n_specs - k))
        args = full(placeholders)
        cts = bwd(*[args[a] for a in nondiff], res, g)
        if not isinstance(cts, (tuple, list)) or len(cts) != len(diff_args):
            return cts  # wrong structure: returned as-is so the structure checks report it
        flat: list[Any] = []
        for position, ct in zip(diff_args, cts):
            parts = layout.flatten_cotangent(position, ct)
            if parts is None:
                return cts
            flat.extend(parts)
        return tuple(flat)

    view = jax.custom_vjp(_named(flat_fun, fun, names), nondiff_argnums=tuple(flat_nondiff))
    view.defvjp(_named(flat_fwd, fwd, names), _named(flat_bwd, bwd, names), symbolic_zeros=symbolic_zeros)
    # the real signature, for messages about a bwd whose result does not fit it (named per argument, not per leaf)
    vars(view)["__jaxdiag_layout__"] = (layout, diff_args)
    return view


def _flat_custom_jvp(obj: Any, layout: Layout) -> Any:
    fun, jvp, nondiff, symbolic_zeros = _compat.custom_jvp_parts(obj)
    if jvp is None:
        return obj
    flat_nondiff, diff_args = _nondiff_split(layout, nondiff)
    names = layout.leaf_names()

    def flat_fun(*arrays: Any) -> Any:
        return fun(*_compat.resolve_positional(fun, layout.build(arrays)))

    def flat_jvp(*rest: Any) -> Any:
        k = len(flat_nondiff)
        nd_values, primals, tangents = rest[:k], rest[k], rest[k + 1]
        args = _compat.resolve_positional(fun, layout.build(_merge(flat_nondiff, nd_values, primals)))
        tans = layout.build(_merge(flat_nondiff, nd_values, tangents), tangents=True)
        return jvp(*[args[a] for a in nondiff], tuple(args[a] for a in diff_args),
                   tuple(tans[a] for a in diff_args))

    view = jax.custom_jvp(_named(flat_fun, fun, names), nondiff_argnums=tuple(flat_nondiff))
    view.defjvp(_named(flat_jvp, jvp, names), symbolic_zeros=symbolic_zeros)
    return view


def unwrap_view(fn: Any) -> Any:
    """The user's function behind a flat view (for names and locations)."""
    return getattr(fn, "__wrapped__", fn) if hasattr(fn, "__jaxdiag_arg_names__") else fn

