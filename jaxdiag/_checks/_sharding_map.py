"""A user primitive inside `shard_map`, judged by running it: forward and `grad` under shard_map against the same
computation without it, with every operand sharded (one example per device), and with one operand replicated or
sharded over fewer mesh axes (JXS004, JXS009, and JXS001 for per-device results that differ).

On JAX that types values by the mesh axes they vary over (`vma`), a failure is attributed to the abstract eval
when it types an output with fewer varying axes than its operands have. A primitive that runs correctly is clean,
whatever its abstract eval returns: a lost type only matters where it changes what shard_map or grad computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generator, Iterator

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from .. import _compat
from .. import _rules as rules
from .._compat import _sharding as cs
from .._core import _locate
from .._core._report import Finding, Location
from .._harness.boundary import call_user
from .._loading._numerics import compare
from ._base import Check, Context, SkipCheck, check
from ._sharding import describe_mesh, first_line, mesh_of


@dataclass(frozen=True)
class Layout:
    """The mesh axes each operand is sharded over inside shard_map: all of them (one example per device), none
    (replicated: one example shared by every device) or some (devices along the others share an example)."""

    axes: tuple[tuple[str, ...], ...]

    def describe(self, names: tuple[str, ...]) -> str:
        if all(a == names for a in self.axes):
            return "every operand sharded (one example per device)"
        parts = [f"operand {i} {'replicated' if not a else 'sharded over ' + ', '.join(map(repr, a)) + ' only'}"
                 for i, a in enumerate(self.axes) if a != names]
        return ", ".join(parts) + ", the others sharded"

    @property
    def short(self) -> str:
        return " ".join(f"P({a!r})" if a else "P()" for a in self.axes)


def layouts(n: int, names: tuple[str, ...]) -> list[Layout]:
    """Every operand sharded; then, for several operands, each one replicated in turn, and each one sharded over
    the first mesh axis only (a value varying over fewer axes than the others)."""
    found = [Layout(tuple(names for _ in range(n)))]
    if n > 1:
        for i in range(n):
            found.append(Layout(tuple(() if k == i else names for k in range(n))))
        if len(names) > 1:
            for i in range(n):
                found.append(Layout(tuple(names[:1] if k == i else names for k in range(n))))
    return found


class Probe:
    """One layout's inputs, the shard_map of the primitive, and the unsharded reference, per device."""

    def __init__(self, ctx: Context, layout: Layout, stacked: list[np.ndarray], shared: list[np.ndarray]) -> None:
        self.ctx, self.layout = ctx, layout
        self.mesh = mesh_of(ctx.options)
        self.names = tuple(self.mesh.axis_names)
        self.sizes = dict(zip(self.names, self.mesh.devices.shape))
        self.devices = int(self.mesh.devices.size)
        self.inputs = [shared[i] if not axes else stacked[i][: self._count(axes)] for i, axes in
                       enumerate(layout.axes)]
        self.specs = tuple(P(axes) if axes else P() for axes in layout.axes)

    def _count(self, axes: tuple[str, ...]) -> int:
        return int(np.prod([self.sizes[a] for a in axes]))

    def row(self, axes: tuple[str, ...], device: int) -> int:
        """Which example of an operand sharded over `axes` device `device` (row-major over the mesh) holds."""
        coords = dict(zip(self.names, np.unravel_index(device, tuple(self.sizes[a] for a in self.names))))
        return int(np.ravel_multi_index([coords[a] for a in axes], [self.sizes[a] for a in axes])) if axes else 0

    def args_of(self, xs: list[Any], device: int) -> list[Any]:
        return [x[self.row(axes, device)] if axes else x for x, axes in zip(xs, self.layout.axes)]

    def placed(self) -> list[Any]:
        return [jax.device_put(x, NamedSharding(self.mesh, s)) for x, s in zip(self.inputs, self.specs)]

    def local(self, xs: tuple[Any, ...]) -> Any:
        return self.ctx.subject.call(*[x[0] if axes else x for x, axes in zip(xs, self.layout.axes)])

    def forward(self) -> Any:
        def body(*xs: Any) -> Any:
            return jax.tree_util.tree_map(lambda o: o[None], self.local(xs))

        return cs.shard_map(body, self.mesh, self.specs, P(self.names))

    def loss(self, cts: list[np.ndarray]) -> Any:
        """A psum-reduced loss inside shard_map (the usual way a sharded loss is written): sum over devices of
        <cotangent, output>. Its gradient needs the cotangent of a replicated operand summed over devices."""
        n = len(self.inputs)

        def body(*xs: Any) -> Any:
            leaves = jax.tree_util.tree_leaves(self.local(xs[:n]))
            local = sum(jax.numpy.sum(c[0] * o) for c, o in zip(xs[n:], leaves) if c is not None)
            return jax.lax.psum(local, self.names)

        specs = self.specs + tuple(P(self.names) for _ in cts)
        mapped = cs.shard_map(body, self.mesh, specs, P())
        return lambda *xs: mapped(*xs, *cts)

    def reference_loss(self, cts: list[np.ndarray]) -> Any:
        def total(*xs: Any) -> Any:
            out: Any = 0.0
            for k in range(self.devices):
                leaves = jax.tree_util.tree_leaves(self.ctx.call(*self.args_of(list(xs), k)))
                out = out + sum(jax.numpy.sum(c[k] * o) for c, o in zip(cts, leaves))
            return out

        return total


def _lost_axes(probe: Probe) -> tuple[int, frozenset[str], Any] | None:
    """(output, the operands' varying axes, its aval) when the abstract eval types an output inside shard_map with
    fewer varying mesh axes than its operands have; None when it keeps them or this JAX does not track them."""
    if not cs.tracks_varying_axes():
        return None
    traced = call_user(jax.make_jaxpr(probe.forward()), *probe.placed())
    if traced.error is not None:
        return None
    prim = probe.ctx.subject.obj
    for eqn in _compat.iter_eqns(traced.value):
        if eqn.primitive is not prim:
            continue
        axes_in = frozenset().union(*[cs.varying_axes(v.aval) or frozenset() for v in eqn.invars])
        for k, v in enumerate(eqn.outvars):
            if not axes_in <= (cs.varying_axes(v.aval) or frozenset()):
                return k, axes_in, v.aval
        return None
    return None


def _abstract_eval_location(ctx: Context) -> Location | None:
    rule = _compat.abstract_eval_rule(ctx.subject.obj)
    loc = _locate.locate(rule) if rule is not None and _locate.is_user_code(rule) else None
    return loc or ctx.subject.location


def _typing(ctx: Context, probe: Probe, lost: tuple[int, frozenset[str], Any]) -> str:
    k, axes_in, aval = lost
    return (f"{ctx.subject.obj.name}'s operands vary over mesh axes {sorted(axes_in)} but its abstract eval types "
            f"output {k} as `{aval}`, with {sorted(cs.varying_axes(aval) or ())} as varying axes")


@check("shard-map", "sharding", {"primitive"})
def shard_map_check(ctx: Context) -> Iterator[Finding]:
    prim = ctx.subject.obj
    if _compat.is_builtin_primitive(prim):
        raise SkipCheck("JAX's own primitive")
    mesh = mesh_of(ctx.options)
    names = tuple(mesh.axis_names)
    stacked, shared = ctx.draw_examples(int(mesh.devices.size)), ctx.example()
    probes = [Probe(ctx, layout, stacked, shared) for layout in layouts(len(ctx.specs), names)]
    outputs = yield from _forward(ctx, probes)
    if outputs is None:
        return
    found = yield from _gradients(ctx, probes, outputs)
    if not found and not cs.tracks_varying_axes() and _compat.jvp_rule(prim) is not None:
        yield rules.CHECK_SKIPPED.finding(
            reason=f"this JAX does not type values inside shard_map by the mesh axes they vary over (`vma`), so "
                   f"whether {prim.name}'s abstract eval keeps them (newer JAX needs it under `grad`) was not "
                   "checked; forward and grad under shard_map were compared with the unsharded ones instead",
            check="shard-map", location=_abstract_eval_location(ctx))


Shapes = list[tuple[tuple[int, ...], Any]]  # (shape, dtype) of each output of one example


def _forward(ctx: Context, probes: list[Probe]) -> Generator[Finding, None, list[Shapes] | None]:
    """Yield a finding when the forward under shard_map raises or differs; return each probe's float output
    shapes (None when a finding ended the check)."""
    prim = ctx.subject.obj
    outputs: list[Shapes] = []
    for n, probe in enumerate(probes):
        where = f"inside shard_map over mesh {describe_mesh(ctx.options)} with {probe.layout.describe(probe.names)}"
        ran = call_user(jax.jit(probe.forward()), *probe.placed())
        if ran.error is not None:
            outputs.append([])
            if n:  # a primitive may demand operands of one varying type, as JAX's own do: loud, not wrong
                continue
            missing = [] if cs.tracks_varying_axes() else cs.missing_replication_rules(prim)
            lost = _lost_axes(probe)
            if missing or lost:
                cause = (f"{prim.name} lacks the replication rules shard_map's check_rep needs on this JAX (not "
                         f"registered: {', '.join(missing)})" if missing or lost is None else _typing(ctx, probe, lost))
                yield rules.SHARD_MAP_RULE_MISSING.finding(
                    evidence=f"{where}, shard_map raises {first_line(ran.error)}: {cause}.",
                    fix=cs.shard_map_rule_fix(prim.name),
                    location=_abstract_eval_location(ctx) if lost else ctx.subject.location)
                return None
            yield rules.SHARDED_RESULT_MISMATCH.finding(
                evidence=f"{prim.name} {where} raised {first_line(ran.error)}",
                fix=f"Make {prim.name}'s impl and lowering work on device-local arrays inside shard_map.",
                location=ctx.subject.location)
            return None
        leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(ran.value)]
        for k in range(probe.devices):
            expected = [np.asarray(leaf) for leaf in
                        jax.tree_util.tree_leaves(ctx.call(*probe.args_of(probe.inputs, k)))]
            for j, (got, want) in enumerate(zip(leaves, expected)):
                cmp = compare(got[k], want)
                if not cmp.ok and not cmp.nonfinite:
                    yield rules.SHARDED_RESULT_MISMATCH.finding(
                        evidence=f"{prim.name} {where}: device {k}'s output {j} differs from {prim.name} on that "
                        f"device's operands alone: {cmp.describe()}",
                        fix=f"{prim.name}'s lowering must compute from the device-local operands only.",
                        location=ctx.subject.location)
                    return None
        floats = all(np.issubdtype(leaf.dtype, np.floating) for leaf in leaves)
        outputs.append([(leaf.shape[1:], leaf.dtype) for leaf in leaves] if floats else [])
    return outputs


def _gradients(ctx: Context, probes: list[Probe], outputs: list[Shapes]) -> Generator[Finding, None, bool]:
    """grad of a psum-reduced loss under shard_map with respect to each float operand, against the same loss
    without shard_map. Returns whether a finding was yielded."""
    prim = ctx.subject.obj
    if _compat.jvp_rule(prim) is None:
        return False  # nothing differentiates it: the forward is all shard_map computes
    rng = np.random.default_rng(7)
    loud: Finding | None = None  # a grad that raises is reported only when none is silently wrong
    for n, (probe, shapes) in enumerate(zip(probes, outputs)):
        if not shapes:
            continue  # an output that is not float (or a layout the primitive refused): no cotangent to send
        cts = [rng.standard_normal((probe.devices, *shape)).astype(dtype) for shape, dtype in shapes]
        for i, spec in enumerate(ctx.specs):
            if not spec.is_float:
                continue
            want = call_user(jax.jit(jax.grad(probe.reference_loss(cts), argnums=i)), *probe.inputs)
            if want.error is not None:
                continue  # the rule fails without shard_map too: the differentiation checks report it
            got = call_user(jax.jit(jax.grad(probe.loss(cts), argnums=i)), *probe.placed())
            finding = _grad_verdict(ctx, probe, i, got, np.asarray(want.value), first=n == 0)
            if finding is not None and got.error is None:
                yield finding
                return True
            loud = loud or finding
    if loud is not None:
        yield loud
    return loud is not None


def _grad_verdict(ctx: Context, probe: Probe, i: int, got: Any, want: np.ndarray, first: bool) -> Finding | None:
    prim = ctx.subject.obj
    where = (f"inside shard_map over mesh {describe_mesh(ctx.options)} with {probe.layout.describe(probe.names)}, "
             f"jax.grad with respect to operand {i} of a psum-reduced loss")
    lost = _lost_axes(probe)
    if got.error is not None:
        if lost is None and not first:
            return None  # a loud refusal of mixed operand types, with a correctly typed output: not wrong
        cause = f"; {_typing(ctx, probe, lost)}" if lost else ""
        rule = rules.SHARD_MAP_RULE_MISSING if lost else rules.SHARDED_RESULT_MISMATCH
        return rule.finding(
            evidence=f"{where} raises {first_line(got.error)}, and the same loss without shard_map does not{cause}.",
            fix=cs.shard_map_rule_fix(prim.name) if lost else
            f"Make {prim.name}'s JVP and transpose rules work on device-local values inside shard_map.",
            location=_abstract_eval_location(ctx) if lost else ctx.subject.location)
    cmp = compare(np.asarray(got.value), want)
    if cmp.ok or cmp.nonfinite:
        return None
    if lost is None:
        return rules.SHARDED_RESULT_MISMATCH.finding(
            evidence=f"{where} differs from the gradient of the same loss without shard_map: {cmp.describe()}",
            fix=f"Check {prim.name}'s JVP and transpose rules on device-local values inside shard_map.",
            location=ctx.subject.location)
    return rules.SHARD_MAP_GRAD_UNSUMMED.finding(
        evidence=f"{where} differs from the gradient of the same loss without shard_map: {cmp.describe()}. "
        f"{_typing(ctx, probe, lost)}, so JAX treats the output as identical on those devices and never sums the "
        f"cotangent of operand {i} over them.",
        fix=cs.shard_map_rule_fix(prim.name, mixed=len(ctx.specs) > 1),
        location=_abstract_eval_location(ctx))


CHECKS: list[Check] = [shard_map_check]
