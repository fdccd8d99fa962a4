"""Rules that call collectives over a named axis (`lax.psum(x, axis_name)`, `all_gather`, `ppermute`): checked as
their code runs on a mesh, each device on its own shard.

Outside a `shard_map` such a rule cannot run at all ("unbound axis name"). Its *view* runs it under
`jax.vmap(..., axis_name=name, axis_size=DEVICES)`, which gives the collectives their meaning over a batch of
devices: the view takes one device's arguments, device 0 gets them as they are and device 1 each float array
reversed along every axis (a linear map that keeps every value domain, so the devices differ and a collective that
sums, gathers or permutes shows), integer and boolean arrays (indices, masks) the same on every device. An output
shard_map types as the same on every device (a `psum`'s) is returned once, as `shard_map` returns an unmapped
output; any other (an `all_gather`'s, a `ppermute`'s: each device gets its own cotangent) is stacked, one row per
device. For a custom_vjp, an argument whose cotangent the bwd reduces over the axis itself (`lax.psum(dw,
axis_name)`: a replicated weight) is passed the same to every device and its cotangent taken once, as `shard_map`
treats a replicated input; every other cotangent is summed back through the reversal. On a JAX without that typing
(`vma`) a rule on a named axis is not run (`under_named_axis` says why).
The view is a function, custom_jvp or custom_vjp of the same signature whose rules run the user's own rules under
that vmap (`__wrapped__` names them), so every check applies unchanged: the bwd is compared with JAX's autodiff of
the primal and with finite differences of the same multi-device function.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable

import jax
import jax.numpy as jnp

from .. import _compat
from .._harness import call_user

DEVICES = 2  # devices the named axis stands for
_MAX_TRIALS = 16  # outputs tried one by one for being the same on every device (beyond: all stacked)


def unbound_axis(errors: list[str]) -> str | None:
    """The axis name of the first "unbound axis name: NAME" among inference's errors."""
    for error in errors:
        _, found, rest = error.partition("unbound axis name: ")
        if found and rest.split():
            return rest.split()[0].strip("'\".,;")
    return None


def axis_view(kind: str, obj: Any, name: str) -> Any:
    """`obj` (a function, custom_jvp or custom_vjp) run on DEVICES devices of the named axis `name`."""
    if kind == "custom_vjp":
        view = _vjp_view(obj, name)
    elif kind == "custom_jvp":
        view = _jvp_view(obj, name)
    else:
        view = _named(lambda *args: _run(obj, name, args, frozenset())[0], obj)
    if view is not obj:  # never the user's own object (a custom_vjp whose defvjp was never called is returned as is)
        vars(view).update(__jaxdiag_axis_of__=obj, __jaxdiag_repro_call__=repro_call)  # for `--repro` scripts
    return view


def repro_call(subject: Any, call: str, specs: list[tuple]) -> tuple[str, list[tuple]]:
    """A `--repro` script's call and SPECS on the named axis: `jax.vmap` of the user's own call over per-device
    arrays (each float argument its own draw per device, a replicated one and every integer one shared), with the
    out_axes jaxdiag used, so the script compares exactly what the checks compared, with plain JAX."""
    args = tuple(jax.ShapeDtypeStruct(shape, dtype) for dtype, shape, _ in specs)
    full = subject.full_args(args) if subject.static_args else args
    user = vars(subject.obj).get("__jaxdiag_axis_of__", subject.obj)
    same: frozenset[int] = frozenset()
    if subject.kind == "custom_vjp":
        _, fwd, bwd, nondiff, _ = _compat.custom_vjp_parts(user)
        if fwd is not None and bwd is not None:
            same = _replicated_arguments(fwd, bwd, nondiff, subject.named_axis, full)
    in_axes = _in_axes(full, same)
    values = [jax.ShapeDtypeStruct((DEVICES, *a.shape), a.dtype) if ax == 0 else a
              for a, ax in zip([a for a in full if _is_array(a)], in_axes)]
    primal = getattr(user, "fun", user)  # typed as the view types it: its primal, run in a shard_map
    out_axes = _output_axes(_closed(primal, full), subject.named_axis, values, in_axes)
    stacked = [(dtype, (DEVICES, *shape) if axis == 0 else shape, domain)
               for (dtype, shape, domain), axis in zip(specs, in_axes)]
    text = (f"jax.vmap(lambda *args: {call}, in_axes={tuple(in_axes)!r}, out_axes={out_axes!r}, "
            f"axis_name={subject.named_axis!r}, axis_size={DEVICES})(*args)  # on {DEVICES} devices of the axis")
    return text, stacked


def _named(fn: Callable, original: Any) -> Callable:
    functools.update_wrapper(fn, original)  # names, docstring and `__wrapped__`: findings point at the user's code
    return fn


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def _spread(x: Any) -> Any:
    """(DEVICES, *x.shape): device 0 gets x, device 1 x reversed along every axis."""
    return jnp.stack([x, jnp.flip(x)])


def _gathered(ct: Any) -> Any:
    """The cotangent of x from the per-device cotangents of `_spread(x)` (its transpose)."""
    return ct[0] + jnp.flip(ct[1])


def _in_axes(args: tuple, same: frozenset[int]) -> list[Any]:
    """Per array argument, its in_axes: 0 for a float array spread over the devices (unless in `same`), None for
    one the same on every device (integers, booleans, a replicated argument)."""
    return [0 if _spread_position(a, i, same) else None for i, a in enumerate(args) if _is_array(a)]


def _device_args(args: tuple, same: frozenset[int]) -> tuple[list[Any], list[Any]]:
    """(the array arguments as vmap takes them, their in_axes)."""
    axes = _in_axes(args, same)
    return [_spread(a) if ax == 0 else a for a, ax in zip([a for a in args if _is_array(a)], axes)], axes


def _closed(fn: Callable, args: tuple) -> Callable:
    """`fn` of the array arguments only, the others (statics, the axis name) closed over."""
    def call(*arrays: Any) -> Any:
        it = iter(arrays)
        return fn(*[next(it) if _is_array(a) else a for a in args])
    return call


def _run(fn: Callable, name: str, args: tuple, same: frozenset[int]) -> tuple[Any, Any]:
    """(fn's outputs on the devices, their out_axes): an output the same on every device once, the others stacked."""
    values, axes = _device_args(args, same)
    closed = _closed(fn, args)
    out_axes = _output_axes(closed, name, values, axes)
    return jax.vmap(closed, in_axes=axes, out_axes=out_axes, axis_name=name, axis_size=DEVICES)(*values), out_axes


def _output_axes(fn: Callable, name: str, values: list[Any], axes: list[Any]) -> Any:
    """Per output leaf: None where it is the same on every device, else 0. As shard_map types it where this JAX
    can say (`_compat._sharding.varying_outputs`: a `psum`'s result is the same on every device, an
    `all_gather`'s varies, though both come out of vmap unmapped); else None where vmap can return it unmapped,
    each leaf tried on its own. By tracing only."""
    from .._compat import _sharding

    shapes = [jax.ShapeDtypeStruct(v.shape, v.dtype) for v in values]
    one = [jax.ShapeDtypeStruct(v.shape[1:] if ax == 0 else v.shape, v.dtype) for v, ax in zip(values, axes)]
    varying = call_user(_sharding.varying_outputs, fn, name, one, [ax == 0 for ax in axes]).value
    if varying is not None:
        tree = jax.tree_util.tree_structure(jax.eval_shape(
            jax.vmap(fn, in_axes=axes, axis_name=name, axis_size=DEVICES), *shapes))
        return jax.tree_util.tree_unflatten(tree, [0 if v else None for v in varying])

    def traced(out_axes: Any) -> bool:
        try:
            jax.eval_shape(jax.vmap(fn, in_axes=axes, out_axes=out_axes, axis_name=name, axis_size=DEVICES), *shapes)
        except ValueError:
            return False
        return True

    out = jax.eval_shape(jax.vmap(fn, in_axes=axes, axis_name=name, axis_size=DEVICES), *shapes)
    leaves, tree = jax.tree_util.tree_flatten(out)
    if len(leaves) > _MAX_TRIALS:
        return 0
    unflatten = jax.tree_util.tree_unflatten
    return unflatten(tree, [None if traced(unflatten(tree, [None if j == i else 0 for j in range(len(leaves))]))
                            else 0 for i in range(len(leaves))])


def _jvp_view(obj: Any, name: str) -> Any:
    fun, jvp, nondiff, symbolic_zeros = _compat.custom_jvp_parts(obj)
    if jvp is None:
        return obj

    def view_fun(*args: Any) -> Any:
        return _run(fun, name, args, frozenset())[0]

    def view_jvp(*rest: Any) -> Any:
        k = len(nondiff)
        statics, primals, tangents = rest[:k], rest[k], rest[k + 1]
        full = _with_nondiff(nondiff, statics, primals)

        def both(*args: Any) -> Any:
            nd = [args[i] for i in nondiff]
            diff = [a for i, a in enumerate(args) if i not in nondiff]
            n = len(diff) // 2
            return jvp(*nd, tuple(diff[:n]), tuple(diff[n:]))

        # primals and tangents spread the same way (a linear map), the jvp rule run on each device
        return _run(both, name, (*full, *tangents), frozenset())[0]

    view = jax.custom_jvp(_named(view_fun, fun), nondiff_argnums=nondiff)
    view.defjvp(_named(view_jvp, jvp), symbolic_zeros=symbolic_zeros)
    return view


def _with_nondiff(nondiff: tuple[int, ...], statics: tuple, others: tuple) -> list[Any]:
    """All positional arguments in order, from the nondiff ones (at `nondiff`) and the others."""
    out, nd, rest = [], iter(statics), iter(others)
    for i in range(len(statics) + len(others)):
        out.append(next(nd) if i in nondiff else next(rest))
    return out


def _vjp_view(obj: Any, name: str) -> Any:
    fun, fwd, bwd, nondiff, symbolic_zeros = _compat.custom_vjp_parts(obj)
    if fwd is None or bwd is None:
        return obj
    replicated: dict[tuple, frozenset[int]] = {}  # per argument types: the arguments whose cotangent is the same

    def same_for(args: tuple) -> frozenset[int]:
        key = tuple((tuple(a.shape), str(a.dtype)) if _is_array(a) else repr(a) for a in args)
        if key not in replicated:
            replicated[key] = _replicated_arguments(fwd, bwd, nondiff, name, args)
        return replicated[key]

    def view_fun(*args: Any) -> Any:
        return _run(fun, name, args, same_for(args))[0]

    # per (residual, cotangent) types: (the residuals' in_axes, the cotangents' in_axes, each cotangent's out_axes);
    # a custom_vjp's residuals hold arrays only, so the plan fwd made stays here for its bwd
    plans: dict[tuple, tuple[Any, Any, tuple]] = {}

    def view_fwd(*args: Any) -> Any:
        same = same_for(args)
        (out, res), axes = _run(lambda *a: _split(fwd(*a)), name, args, same)
        out_axes, res_axes = axes if isinstance(axes, tuple) else (axes, axes)
        diff = [i for i in range(len(args)) if i not in nondiff]
        ct_axes = tuple(0 if _spread_position(args[i], i, same) else None for i in diff)
        plans[_types(res, out)] = (res_axes, out_axes, ct_axes)
        return out, res

    def view_bwd(*rest: Any) -> Any:
        k = len(nondiff)
        statics, res, g = rest[:k], rest[k], rest[k + 1]
        # the plan of the fwd these residuals came from (the latest one where a transformation renamed nothing)
        res_axes, out_axes, ct_axes = plans.get(_types(res, g)) or list(plans.values())[-1]
        cts = jax.vmap(lambda r, gg: bwd(*statics, r, gg), in_axes=(res_axes, out_axes), out_axes=ct_axes,
                       axis_name=name, axis_size=DEVICES)(res, g)
        return tuple(_gathered(ct) if ax == 0 and ct is not None else ct for ct, ax in zip(cts, ct_axes))

    view = jax.custom_vjp(_named(view_fun, fun), nondiff_argnums=nondiff)
    view.defvjp(_named(view_fwd, fwd), _named(view_bwd, bwd), symbolic_zeros=symbolic_zeros)
    return view


def _types(*trees: Any) -> tuple:
    """A hashable key of the trees' structure and leaf types (shapes and dtypes)."""
    leaves, tree = jax.tree_util.tree_flatten(trees)
    return tree, tuple((tuple(getattr(x, "shape", ())), str(getattr(x, "dtype", type(x)))) for x in leaves)


def _split(pair: Any) -> tuple[Any, Any]:
    """A fwd's (output, residuals), as a tuple whatever sequence it returned."""
    out, res = pair
    return out, res


def _spread_position(a: Any, i: int, same: frozenset[int]) -> bool:
    return _is_array(a) and i not in same and jnp.issubdtype(a.dtype, jnp.inexact) and a.size > 0


def _replicated_arguments(fwd: Callable, bwd: Callable, nondiff: tuple[int, ...], name: str, args: tuple
                          ) -> frozenset[int]:
    """The float arguments whose cotangent the bwd returns the same on every device (summed over the axis, as a
    replicated weight's is), as shard_map types them with every argument varying; none where this JAX cannot
    say."""
    from .._compat import _sharding

    diff = [i for i in range(len(args)) if i not in nondiff and _spread_position(args[i], i, frozenset())]
    if not diff:
        return frozenset()
    arrays = [a for a in args if _is_array(a)]
    shapes = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
    statics = [args[i] for i in nondiff]
    positions = [i for i in range(len(args)) if i not in nondiff]

    spread = [k for k, a in enumerate(arrays) if _spread_position(a, -1, frozenset())]

    def cotangents(*values: Any) -> Any:
        out, res = _split(_closed(fwd, args)(*values))
        # a cotangent that varies over the axis even where the output does not: a cotangent the bwd makes the same
        # on every device is then a reduction of its own (`psum(dw)`), never the cotangent handed through
        varying_zero = jnp.ravel(values[spread[0]])[0] * 0
        return bwd(*statics, res, jax.tree_util.tree_map(lambda o: o * 0 + varying_zero.astype(o.dtype), out))

    varying = call_user(_sharding.varying_outputs, cotangents, name, shapes,
                        [_spread_position(a, -1, frozenset()) for a in arrays]).value
    if varying is None:
        return frozenset()
    cts = jax.eval_shape(jax.vmap(cotangents, in_axes=0, axis_name=name, axis_size=DEVICES),
                         *[jax.ShapeDtypeStruct((DEVICES, *a.shape), a.dtype) for a in arrays])
    per_argument = iter(varying)
    same = set()
    for position, ct in zip(positions, cts if isinstance(cts, (tuple, list)) else ()):
        flags = [next(per_argument, True) for _ in jax.tree_util.tree_leaves(ct)]
        if position in diff and flags and not any(flags):
            same.add(position)
    return frozenset(same)


# what a collective says when it runs outside any mapped axis, where it names no axis ("unbound axis name" does)
_COLLECTIVE_EVALUATED = re.compile(r"Evaluation rule for '(ppermute|all_to_all|all_gather\w*|psum_scatter|"
                                   r"reduce_scatter|pbroadcast|psum\w*|pmax|pmin|axis_index)' not implemented")


def under_named_axis(subject: Any, errors: list[str], notes: list[Any]) -> bool | str:
    """Before inference (no `errors`) when the subject takes its axis's name as a static (`axis_name`: a bwd alone
    may use it, `lax.psum(dw, axis_name)`), or when inference failed because its collectives need a mapped axis:
    make the subject its view on that axis (once) and say so (JXN021); the ladder is then climbed again. The axis
    is the one the error names, or the value of the static axis parameter. False for a primitive (its collectives
    are its impl's), or a subject already viewed; a reason (a string) where this JAX cannot run it so."""
    from .._compat import _sharding

    if subject.named_axis or subject.kind not in ("function", "custom_jvp", "custom_vjp"):
        return False
    name = unbound_axis(errors)
    if name is None and (not errors or any(_COLLECTIVE_EVALUATED.search(e) for e in errors)):
        name = _static_axis(subject)  # before inference: a rule taking its axis's name needs the axis throughout
        if name is None and errors:  # a literal axis (`ppermute(x, 'model', ...)`): the traced collective names it
            name = _traced_axis(subject)
    if name is None:
        return False
    if not _sharding.types_varying_values():  # without shard_map's typing a psum's output is an all_gather's
        return (f"its collectives need the named axis {name!r}, and this JAX types no values as varying over a "
                "mesh axis, which telling the same value on every device from per-device ones needs; a newer JAX "
                "checks it on two devices of the axis")
    from .. import _rules as rules

    base = subject.original if subject.original is not None else subject.obj
    subject.obj, subject.original, subject.named_axis = axis_view(subject.kind, base, name), None, name
    notes.append(rules.NAMED_AXIS.finding(target=subject.label, axis=name, devices=DEVICES,
                                          location=subject.location))
    return True


def _static_axis(subject: Any) -> str | None:
    """The string the subject's static axis parameter (`axis_name`, `seq_axis_name`) takes in inference."""
    from ._int_params import COLLECTIVE_AXIS
    from ._signature import positional, signature_of
    from ._static_use import collective_axes
    from ._static_values import static_templates

    statics = static_templates(subject) or {}
    params = positional(signature_of(subject))
    axes = collective_axes(subject, [p.name for p in params])
    for i, param in enumerate(params):
        value = getattr(statics.get(i), "value", None)
        if (COLLECTIVE_AXIS.match(param.name) or param.name in axes) and isinstance(value, str):
            return value
    return None


def _traced_axis(subject: Any) -> str | None:
    """The axis name a collective in the subject's traced jaxpr (on its last tried inputs) is bound with."""
    if not subject.specs:
        return None
    shapes = [jax.ShapeDtypeStruct(spec.shape, spec.dtype) for spec in subject.specs]
    traced = call_user(jax.make_jaxpr(subject.call), *shapes)
    if traced.error is not None:  # tracing checks the axis where evaluation did not ("Found an unbound axis name")
        return unbound_axis([str(traced.error)])
    for eqn in _compat.iter_eqns(traced.value):
        axes = eqn.params.get("axis_name", eqn.params.get("axes"))
        for axis in axes if isinstance(axes, (tuple, list)) else (axes,):
            if isinstance(axis, str):
                return axis
    return None
