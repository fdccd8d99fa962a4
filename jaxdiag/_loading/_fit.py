"""Inputs against the loaded target: run by the engine once the target is loaded and its inputs are known, before
any check, so a mismatch is a usage error (exit 2), never a finding against correct code."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .._core._errors import UsageError
from ._inputs import ArgSpec, Static, template_text


def check_inputs_fit(target: Any, templates: list[Any], params: dict[str, Any], in_axes: Any) -> None:
    """UsageError when the given inputs cannot be a call of `target` (a `_targets.Target`): more --arg than a
    primitive's rules take, or --in-axes that does not match the --arg count and ranks."""
    if not templates:  # inferred inputs are chosen to fit
        return
    label = getattr(target, "ref", "the target")
    if getattr(target, "kind", None) == "primitive":
        arity = primitive_arity(target.obj, params)
        if arity is not None and len(templates) > arity:
            raise UsageError(f"{label} takes {arity} array argument(s) (the positional parameters of its impl and "
                             f"abstract eval, bind params aside) but {len(templates)} --arg given")
    check_in_axes(in_axes, templates, label)


def primitive_arity(prim: Any, params: dict[str, Any]) -> int | None:
    """How many operands a primitive's user-written impl/abstract eval accept positionally (the given bind params'
    names aside); None when it cannot be known (`*args`, no user rule, no signature)."""
    import inspect

    from .. import _compat
    from .._core import _locate

    counts = []
    for fn in (_compat.impl(prim), _compat.abstract_eval_rule(prim)):
        if fn is None or not _locate.is_user_code(fn):
            continue
        try:
            sig = inspect.signature(_locate.unwrap(fn))
        except (TypeError, ValueError):
            return None
        if any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values()):
            return None
        counts.append(sum(1 for p in sig.parameters.values()
                          if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in params))
    return max(counts) if counts else None


def check_in_axes(in_axes: Any, templates: list[Any], label: str = "the target") -> None:
    """--in-axes must be a prefix of the arguments: one entry per --arg (or one int/None for all), each axis within
    the rank of its batched argument (-(rank+1)..rank)."""
    if in_axes is None or not templates:
        return
    if isinstance(in_axes, (tuple, list)):
        if len(in_axes) != len(templates):
            entries = f"{len(in_axes)} entr{'y' if len(in_axes) == 1 else 'ies'}"
            raise UsageError(f"--in-axes {_axes_text(in_axes)} has {entries} but {len(templates)} --arg given for "
                             f"{label}: give one axis (or None) per argument")
        for i, (axis, template) in enumerate(zip(in_axes, templates)):
            _check_axis(axis, template, f"argument {i}", in_axes)
    else:
        for i, template in enumerate(templates):
            _check_axis(in_axes, template, f"argument {i}", in_axes)


def _check_axis(axis: Any, template: Any, where: str, whole: Any) -> None:
    if axis is None or isinstance(template, Static):
        return
    if isinstance(axis, bool) or not isinstance(axis, (int, tuple, list, dict)):
        return  # not an axis jaxdiag parses: JAX reports it
    if isinstance(axis, int):
        for spec in _array_leaves(template):
            rank = len(spec.shape) + 1  # the batched argument has the batch axis too
            if not -rank <= axis < rank:
                raise UsageError(f"--in-axes {_axes_text(whole)}: axis {axis} is out of range for {where} ({spec}, "
                                 f"batched rank {rank}: valid axes {-rank}..{rank - 1})")
        return
    same = (isinstance(axis, dict) and isinstance(template, dict) and set(axis) == set(template)) or (
        isinstance(axis, (tuple, list)) and type(template) in (tuple, list) and len(axis) == len(template))
    if not same:
        raise UsageError(f"--in-axes {_axes_text(whole)}: the entry {_axes_text(axis)} for {where} does not match "
                         f"its structure {template_text(template)}; give an int or None, or one entry per element")
    items = axis.items() if isinstance(axis, dict) else enumerate(axis)
    for key, sub in items:
        _check_axis(sub, template[key], f"{where}[{key!r}]", whole)


def _array_leaves(template: Any) -> Iterator[ArgSpec]:
    if isinstance(template, ArgSpec):
        yield template
    elif isinstance(template, dict):
        for value in template.values():
            yield from _array_leaves(value)
    elif isinstance(template, (tuple, list)):
        for value in template:
            yield from _array_leaves(value)


def _axes_text(axes: Any) -> str:
    if isinstance(axes, (tuple, list)) and type(axes) in (tuple, list):
        return ",".join("None" if a is None else _axes_text(a) for a in axes) if type(axes) is tuple and all(
            not isinstance(a, (tuple, list, dict)) for a in axes) else repr(axes)
    return repr(axes)
