"""JXS005: an opaque user call (ffi_call, pure_callback, a user primitive lowered to a custom call) that makes XLA
gather its sharded operands, read off the SPMD-partitioned HLO of `jax.jit` on sharded inputs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

import jax
import numpy as np

from .. import _compat
from .._core import _locate
from .. import _rules as rules
from .._compat import _sharding as cs
from .._core._report import Finding, Location
from ._base import Check, Context, check
from .._harness.boundary import call_user
from ._sharding import describe_mesh, mesh_of, sharded_runs, sharding_options


@dataclass(frozen=True)
class OpaqueCall:
    """A user call XLA cannot partition: its custom-call targets and its global operand/result shapes."""

    label: str  # "ffi_call 'CumsumRows'", "pure_callback _cumsum", "primitive my_kernel"
    targets: tuple[str, ...]
    operand_bytes: int
    result_shapes: tuple[tuple[int, ...], ...]
    location: Location | None
    kind: str  # "ffi_call", "pure_callback", "primitive"


def _nbytes(aval: Any) -> int:
    try:
        return int(np.prod(aval.shape)) * np.dtype(aval.dtype).itemsize
    except TypeError:
        return 0


def _primitive_targets(prim: Any, avals: list[Any], params: dict) -> tuple[str, ...]:
    """The non-JAX custom-call targets a user primitive lowers to (empty for `mlir.lower_fun` lowerings)."""
    shapes = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals]
    lowered = call_user(cs.lowered_text, lambda *xs: prim.bind(*xs, **params), *shapes)
    if lowered.error is not None:
        return ()
    text = lowered.value
    return tuple(dict.fromkeys(t for t in cs.custom_call_targets(text) if not cs.is_internal_target(t)))


def opaque_calls(ctx: Context) -> list[OpaqueCall]:
    subject = ctx.subject
    if subject.kind == "primitive":
        if _compat.is_builtin_primitive(subject.obj):
            return []
        avals = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in subject.specs]
        found = _primitive_targets(subject.obj, avals, subject.params)
        if not found:
            return []
        out = jax.eval_shape(lambda *xs: subject.call(*xs), *avals)
        return [OpaqueCall(f"primitive {subject.obj.name}", found, sum(_nbytes(a) for a in avals),
                           tuple(tuple(leaf.shape) for leaf in jax.tree_util.tree_leaves(out)), subject.location,
                           "primitive")]
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in subject.specs]
    traced = call_user(jax.make_jaxpr(lambda *xs: subject.call(*xs)), *shapes)
    if traced.error is not None:
        return []
    jaxpr = traced.value
    calls: list[OpaqueCall] = []
    for eqn in _global_eqns(jaxpr):
        prim = eqn.primitive
        name = getattr(prim, "name", "")
        in_avals = [v.aval for v in eqn.invars]
        if name == "ffi_call":
            targets: tuple[str, ...] = (_compat.foreign_call_target(eqn),)
            label = f"ffi_call {targets[0]!r}"
        elif name == "pure_callback":
            targets = cs.callback_targets()
            label = f"pure_callback {_compat.foreign_call_target(eqn)}"
        elif _compat.is_primitive(prim) and not _compat.is_builtin_primitive(prim):
            targets = _primitive_targets(prim, in_avals, dict(eqn.params))
            label = f"primitive {name}"
            if not targets:
                continue
        else:
            continue
        where = _compat.eqn_source_line(eqn)
        location = Location(_locate.relative_path(where[0]), where[1],
                            _compat.eqn_source_function(eqn) or name) if where else subject.location
        calls.append(OpaqueCall(label, targets, sum(_nbytes(a) for a in in_avals),
                                tuple(tuple(v.aval.shape) for v in eqn.outvars), location,
                                name if name in ("ffi_call", "pure_callback") else "primitive"))
    return calls


# Equations whose body runs per device on local shapes (shard_map, pmap) or under the user's own partitioning rule
# (custom_partitioning): calls inside them are not gathered by XLA's partitioner.
_PER_DEVICE = ("shard_map", "xla_pmap", "custom_partitioning")


def _global_eqns(jaxpr: Any) -> Iterator[Any]:
    """Every equation that sees global shapes, depth first (not inside shard_map/pmap/custom_partitioning)."""
    for eqn in getattr(jaxpr, "jaxpr", jaxpr).eqns:
        yield eqn
        if getattr(eqn.primitive, "name", "") in _PER_DEVICE:
            continue
        for sub in _compat.sub_jaxprs(eqn):
            yield from _global_eqns(sub)


_SHAPE = re.compile(r"\b[a-z]+[0-9]*\[([0-9,]*)\]")


def _custom_call_shapes(hlo: str, target: str) -> list[tuple[tuple[int, ...], ...]]:
    """The result shapes of every custom-call to `target` in partitioned HLO text."""
    found = []
    for line in hlo.splitlines():
        if "custom-call(" not in line or f'custom_call_target="{target}"' not in line:
            continue
        lhs = line.split("custom-call(")[0]
        lhs = lhs.split("=", 1)[1] if "=" in lhs else lhs
        found.append(tuple(tuple(int(d) for d in m.group(1).split(",") if d) for m in _SHAPE.finditer(lhs)))
    return found


def _collectives(hlo: str) -> list[str]:
    names = []
    for kind in ("all-gather", "all-to-all", "collective-permute"):
        count = len(re.findall(rf"\b{kind}(?:-start)?\(", hlo))
        if count:
            names.append(f"{count} {kind}")
    return names


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


@check("gathering-cost", "sharding", {"function", "primitive", "custom_jvp", "custom_vjp"})
def gathering_cost(ctx: Context) -> Iterator[Finding]:
    calls = opaque_calls(ctx)
    if not calls:
        return
    runs = sharded_runs(ctx)
    devices = int(np.prod(sharding_options(ctx).mesh))
    mesh = mesh_of(ctx.options)
    for call in calls:
        for run in runs:
            if not run.placement.sharded or run.error is not None or not run.hlo:
                continue
            shapes = [s for t in call.targets for s in _custom_call_shapes(run.hlo, t)]
            if not shapes or not any(set(call.result_shapes) <= set(s) for s in shapes):
                continue  # the call runs on per-device shards: partitioned, nothing gathered
            if not _collectives(run.hlo):
                continue  # global shapes, but nothing was moved to get them (its operands were replicated anyway)
            shards = max(int(np.prod([mesh.shape[a] for entry in spec for a in (
                entry if isinstance(entry, tuple) else (entry,)) if a is not None] or [1]))
                for spec in run.placement.specs)
            moved = call.operand_bytes * (shards - 1) / shards
            collectives = ", ".join(_collectives(run.hlo))
            where = "device 0 runs it alone" if call.kind == "pure_callback" else "every device runs it"
            fix = ("Wrap the call in `shard_map` over the mesh (in_specs/out_specs sharding the dimensions it "
                   "treats independently) so each device calls it on its own shard, or give it a "
                   "`custom_partitioning` rule whose `partition` lowers to the call on per-device shapes.")
            yield rules.SHARDED_CALL_GATHERS.finding(
                evidence=f"{call.label} under jit with {run.placement.describe(ctx.specs)} on mesh "
                f"{describe_mesh(ctx.options)}: the partitioned HLO runs the call on the global operand "
                f"({_fmt_bytes(call.operand_bytes)}; {where}) after {collectives}: "
                f"{_fmt_bytes(moved)} moved per call for each device that runs it, up to "
                f"{_fmt_bytes(moved * devices)} over the {devices} devices, where a partitioned call would work on "
                f"each device's own 1/{shards} shard.",
                fix=fix, location=call.location)
            break


CHECKS: list[Check] = [gathering_cost]
