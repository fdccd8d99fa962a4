"""Sharding checks that need no partitioner run: a Shardy `sharding_rule` against the op's real behaviour
(JXS003), and a user primitive inside `shard_map` (JXS004, and JXS001 for its per-device results)."""

from __future__ import annotations

import linecache
import re
from typing import Any, Generator, Iterator

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from .. import _compat
from .._core import _locate
from .. import _rules as rules
from .._compat import _sharding as cs
from .._loading._numerics import compare
from .._core._report import Finding, Location
from ._base import Check, Context, SkipCheck, check
from .._harness.boundary import call_user
from ._sharding import describe_mesh, mesh_of, reference_outputs

# ---------------------------------------------------------------------------------------------------------------
# JXS003: pass-through factors of a Shardy sharding_rule
# ---------------------------------------------------------------------------------------------------------------


def _normalize(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\s*(->|,)\s*", r" \1 ", text)).strip()


def rule_location(fn: Any, text: str) -> Location | None:
    """The line that writes `sharding_rule="..."` with this rule, in the file that defines `fn`."""
    loc = _locate.locate(fn) if fn is not None else None
    if loc is None:
        return None
    path = _locate.unwrap(fn).__code__.co_filename
    lines = linecache.getlines(path)
    fallback = None
    for number, line in enumerate(lines, start=1):
        for match in re.finditer(r"""(["'])([^"']*->[^"']*)\1""", line):
            if _normalize(match.group(2)) == _normalize(text):
                return Location(loc.path, number, "sharding_rule")
        if fallback is None and "sharding_rule" in line:
            fallback = Location(loc.path, number, "sharding_rule")
    return fallback or loc


def _split(x: np.ndarray, axis: int, pieces: int) -> list[np.ndarray]:
    return list(np.split(np.asarray(x), pieces, axis=axis))


@check("sharding-rule", "sharding", {"custom_partitioning"})
def sharding_rule(ctx: Context) -> Iterator[Finding]:
    parts = cs.partition_parts(ctx.subject.obj)
    if parts.rule is None:
        raise SkipCheck("no sharding_rule declared")
    factors = cs.rule_factors(parts.rule)
    if factors is None:
        raise SkipCheck("the sharding_rule is a callable; only rule strings and SdyShardingRule objects are checked")
    example = ctx.example()
    reference = reference_outputs(ctx)
    ranks = [np.ndim(x) for x in example], [np.ndim(r) for r in reference]
    if ([len(m) for m in factors.operands], [len(m) for m in factors.results]) != ranks:
        raise SkipCheck(f"the sharding_rule {factors.text!r} maps {len(factors.operands)} operand(s) and "
                        f"{len(factors.results)} result(s) of ranks {[len(m) for m in factors.operands]} -> "
                        f"{[len(m) for m in factors.results]}; the op's are {ranks[0]} -> {ranks[1]}")
    seen: set[str] = set()
    for operand in factors.operands:
        for dim in operand:
            if len(dim) != 1 or dim[0] in factors.special or dim[0] in seen:
                continue
            factor = dim[0]
            seen.add(factor)
            finding = _check_factor(ctx, parts, factors, factor, example, reference)
            if finding is not None:
                yield finding
                return


def _positions(mappings: Any, factor: str) -> list[tuple[int, int]]:
    return [(i, d) for i, mapping in enumerate(mappings) for d, dim in enumerate(mapping) if dim == (factor,)]


def _check_factor(ctx: Context, parts: Any, factors: Any, factor: str, example: list[np.ndarray],
                  reference: list[np.ndarray]) -> Finding | None:
    ins, outs = _positions(factors.operands, factor), _positions(factors.results, factor)
    if not ins or not outs:
        return None
    sizes = {np.shape(example[i])[d] for i, d in ins}
    if len(sizes) != 1 or sizes.pop() < 2:
        return None
    size = np.shape(example[ins[0][0]])[ins[0][1]]
    pieces = next(k for k in (2, 3, 5, 7, size) if size % k == 0)
    split_args = [list(example) for _ in range(pieces)]
    for i, d in ins:
        for k, piece in enumerate(_split(example[i], d, pieces)):
            split_args[k][i] = piece
    pieces_out = [call_user(parts.fun, *ctx.subject.full_args(args)) for args in split_args]
    if any(p.error is not None for p in pieces_out):
        return None  # the op cannot run on a slice at all (shape checks): Shardy would not keep it sharded either
    per_piece = [[np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(p.value)] for p in pieces_out]
    for r, e in outs:
        joined = np.concatenate([outs_k[r] for outs_k in per_piece], axis=e)
        cmp = compare(joined, reference[r])
        if cmp.ok or cmp.nonfinite:
            continue
        where = ", ".join(f"operand {i} dimension {d}" for i, d in ins)
        active = ("this JAX partitions with Shardy (jax_use_shardy_partitioner), so it keeps that dimension "
                  "sharded and hands `partition` per-device slices along it" if cs.uses_shardy() else
                  "this JAX still partitions with GSPMD, so the rule takes effect once Shardy is enabled "
                  "(jax_use_shardy_partitioner=True, the default on newer JAX)")
        return rules.SHARDING_RULE_NOT_PASSTHROUGH.finding(
            evidence=f"the sharding_rule {factors.text!r} of {ctx.subject.name} declares factor {factor!r} "
            f"({where}, size "
            f"{size}) as passing through to result {r} dimension {e}, but the op mixes values along it: applied to "
            f"{pieces} slices along that dimension and concatenated, result {r} has {cmp.describe()}; {active}.",
            fix=f"Declare {factor!r} as needing replication: `def_partition(..., sharding_rule={factors.text!r}, "
                f"need_replication_factors=({factor!r},))`, or give the result dimension its own factor "
                f"(e.g. {_renamed(factors, factor)!r}) so Shardy does not propagate the sharding through it.",
            location=rule_location(parts.partition or parts.fun, factors.text))
    return None


def _renamed(factors: Any, factor: str) -> str:
    used = {f for m in factors.operands + factors.results for dim in m for f in dim}
    new = next(c for c in "klmnopqrstuvwxyz" + "abcdefgh" if c not in used)
    text = factors.text
    lhs, rhs = text.split("->")
    return lhs + "->" + re.sub(rf"\b{re.escape(factor)}\b", new, rhs)


# ---------------------------------------------------------------------------------------------------------------
# shard_map: one example per device
# ---------------------------------------------------------------------------------------------------------------


def _per_device_fn(ctx: Context) -> tuple[Any, Any]:
    mesh = mesh_of(ctx.options)
    names = tuple(mesh.axis_names)
    subject = ctx.subject

    def body(*xs: Any) -> Any:
        out = subject.call(*[x[0] for x in xs])
        return jax.tree_util.tree_map(lambda o: o[None], out)

    spec = P(names)
    return cs.shard_map(body, mesh, tuple(spec for _ in ctx.specs), spec), mesh


def _abstract_eval_location(ctx: Context) -> Location | None:
    rule = _compat.abstract_eval_rule(ctx.subject.obj)
    loc = _locate.locate(rule) if rule is not None and _locate.is_user_code(rule) else None
    return loc or ctx.subject.location


@check("shard-map", "sharding", {"primitive"})
def shard_map_check(ctx: Context) -> Iterator[Finding]:
    prim = ctx.subject.obj
    if _compat.is_builtin_primitive(prim):
        raise SkipCheck("JAX's own primitive")
    devices = int(np.prod(ctx.options.mesh))  # type: ignore[attr-defined]
    stacked = ctx.draw_examples(devices)
    fn, mesh = _per_device_fn(ctx)
    names = tuple(mesh.axis_names)
    placed = [jax.device_put(x, NamedSharding(mesh, P(names))) for x in stacked]
    missing = yield from _rule_missing(ctx, fn, placed)
    ran = call_user(jax.jit(fn), *placed)
    if ran.error is not None:
        exc = ran.error
        if missing:
            return
        yield rules.SHARDED_RESULT_MISMATCH.finding(
            evidence=f"{prim.name} inside shard_map over mesh {describe_mesh(ctx.options)} (one "
            f"{', '.join(map(str, ctx.specs))} example per device) raised {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''}",
            fix=f"Make {prim.name}'s impl and lowering work on device-local arrays inside shard_map.",
            location=ctx.subject.location)
        return
    leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(ran.value)]
    for k in range(devices):
        expected = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(ctx.call(*[x[k] for x in stacked]))]
        for j, (got, want) in enumerate(zip(leaves, expected)):
            cmp = compare(got[k], want)
            if not cmp.ok and not cmp.nonfinite:
                yield rules.SHARDED_RESULT_MISMATCH.finding(
                    evidence=f"{prim.name} inside shard_map over mesh {describe_mesh(ctx.options)}, one example "
                    "per device: "
                    f"device {k}'s output {j} differs from {prim.name} on that example alone: {cmp.describe()}",
                    fix=f"{prim.name}'s lowering must compute from the device-local operands only.",
                    location=ctx.subject.location)
                return


def _rule_missing(ctx: Context, fn: Any, placed: list[Any]) -> Generator[Finding, None, bool]:
    """Yield JXS004 when the primitive lacks what shard_map needs here; return whether it did."""
    prim = ctx.subject.obj
    if cs.tracks_varying_axes():
        traced = call_user(jax.make_jaxpr(fn), *placed)
        if traced.error is not None:
            return False
        jaxpr = traced.value
        for eqn in _compat.iter_eqns(jaxpr):
            if eqn.primitive is not prim:
                continue
            axes_in = frozenset().union(*[cs.varying_axes(v.aval) or frozenset() for v in eqn.invars])
            lost = [k for k, v in enumerate(eqn.outvars)
                    if not axes_in <= (cs.varying_axes(v.aval) or frozenset())]
            if not lost:
                return False
            consequence = _grad_consequence(ctx, fn, placed)
            yield rules.SHARD_MAP_RULE_MISSING.finding(
                evidence=f"inside shard_map over mesh {describe_mesh(ctx.options)}, {prim.name}'s inputs vary "
                "over mesh "
                f"axes {sorted(axes_in)} but its abstract eval types output {lost[0]} as "
                f"`{eqn.outvars[lost[0]].aval}`, identical on every device (no varying axes): "
                f"this JAX needs {cs.shard_map_rule_name()}.{consequence}",
                fix=cs.shard_map_rule_fix(prim.name), location=_abstract_eval_location(ctx))
            return True
        return False
    missing = cs.missing_replication_rules(prim)
    if not missing:
        return False
    ran = call_user(jax.jit(fn), *placed)
    exc = ran.error
    observed = (" (shard_map ran, but only because nothing checked the output's replication)" if exc is None else
                f": shard_map raises {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    yield rules.SHARD_MAP_RULE_MISSING.finding(
        evidence=f"{prim.name} lacks the replication rules shard_map's check_rep needs on this JAX "
        f"(not registered: {', '.join(missing)}){observed}",
        fix=cs.shard_map_rule_fix(prim.name), location=ctx.subject.location)
    return True


def _grad_consequence(ctx: Context, fn: Any, placed: list[Any]) -> str:
    """What plain JAX does with the lost axes: grad of the shard_map, when the primitive has a JVP rule."""
    prim = ctx.subject.obj
    if _compat.jvp_rule(prim) is None or not all(s.is_float for s in ctx.specs):
        return " The output is then cast back to varying, which `grad` cannot transpose."
    def loss(*xs: Any) -> Any:
        return sum(jax.numpy.sum(leaf) for leaf in jax.tree_util.tree_leaves(fn(*xs)))
    exc = call_user(jax.jit(jax.grad(loss)), *placed).error
    if exc is not None:
        return (f" Plain JAX confirms it: jax.grad through this shard_map raises {type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:200] if str(exc) else ''}")
    return ""


CHECKS: list[Check] = [sharding_rule, shard_map_check]
