"""custom_partitioning verdicts from evidence: the result sharding `partition` returns against the declared one
(JXS002 when results break, JXS007 when XLA reconciles them at a cost), and a Shardy `sharding_rule` that passes a
dimension the op mixes (JXS003 when the partitioner then hands `partition` slices it computes wrongly, JXS008 when
`partition` gathers them)."""

from __future__ import annotations

import linecache
import re
from dataclasses import dataclass
from typing import Any, Iterator

import jax
import numpy as np

from .. import _rules as rules
from .._compat import _sharding as cs
from .._core import _locate
from .._core._report import Finding, Location
from .._harness.boundary import call_user
from .._loading._numerics import Comparison, compare
from ._base import Check, Context, SkipCheck, check
from ._sharding import (
    callback_location, callback_name, describe_mesh, first_line, moved_bytes, reference_outputs, same_sharding,
    sharded_runs, sharding_options, show_spec, worst,
)

# ---------------------------------------------------------------------------------------------------------------
# JXS003: pass-through factors of a Shardy sharding_rule
# ---------------------------------------------------------------------------------------------------------------


def _normalize(text: str) -> str:
    return re.sub(r"\s+", "", text)


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


@dataclass(frozen=True)
class Mixing:
    """A dimension the op mixes values along: split into `pieces` slices along operand dimensions `ins`, applied to
    each and concatenated along result `result` dimension `dim`, the op differs from the op on the whole array."""

    ins: tuple[tuple[int, int], ...]
    result: int
    dim: int
    size: int
    pieces: int
    cmp: Comparison


def _mixes(ctx: Context, fun: Any, ins: list[tuple[int, int]], outs: list[tuple[int, int]]) -> Mixing | None:
    example, reference = ctx.example(), reference_outputs(ctx)
    sizes = {np.shape(example[i])[d] for i, d in ins}
    if len(sizes) != 1 or sizes.pop() < 2:
        return None
    size = np.shape(example[ins[0][0]])[ins[0][1]]
    pieces = next(k for k in (2, 3, 5, 7, size) if size % k == 0)
    split_args = [list(example) for _ in range(pieces)]
    for i, d in ins:
        for k, piece in enumerate(_split(example[i], d, pieces)):
            split_args[k][i] = piece
    pieces_out = [call_user(fun, *ctx.subject.full_args(args)) for args in split_args]
    if any(p.error is not None for p in pieces_out):
        return None  # the op cannot run on a slice at all (shape checks): Shardy would not keep it sharded either
    per_piece = [[np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(p.value)] for p in pieces_out]
    for r, e in outs:
        if r >= len(reference) or any(r >= len(o) or np.ndim(o[r]) <= e for o in per_piece):
            continue
        joined = np.concatenate([outs_k[r] for outs_k in per_piece], axis=e)
        if joined.shape != np.shape(reference[r]):
            continue
        cmp = compare(joined, reference[r])
        if not cmp.ok and not cmp.nonfinite:
            return Mixing(tuple(ins), r, e, size, pieces, cmp)
    return None


def mixed_factors(ctx: Context) -> dict[str, Mixing]:
    """The factors the `sharding_rule` passes through from an operand to a result although the op mixes values
    along them (cached per subject; empty without a string rule that fits the op's ranks)."""
    if ctx.cache.sharding.mixed_factors is not None:
        return ctx.cache.sharding.mixed_factors
    found: dict[str, Mixing] = {}
    ctx.cache.sharding.mixed_factors = found
    parts = cs.partition_parts(ctx.subject.obj)
    factors = cs.rule_factors(parts.rule)
    if factors is None:
        return found
    ranks = [np.ndim(x) for x in ctx.example()], [np.ndim(r) for r in reference_outputs(ctx)]
    if ([len(m) for m in factors.operands], [len(m) for m in factors.results]) != ranks:
        return found
    for operand in factors.operands:
        for dim in operand:
            if len(dim) != 1 or dim[0] in factors.special or dim[0] in found:
                continue
            ins, outs = _positions(factors.operands, dim[0]), _positions(factors.results, dim[0])
            mixing = _mixes(ctx, parts.fun, ins, outs) if ins and outs else None
            if mixing is not None:
                found[dim[0]] = mixing
    return found


@check("sharding-rule", "sharding", {"custom_partitioning"})
def sharding_rule(ctx: Context) -> Iterator[Finding]:
    """JXS003 (results wrong) or JXS008 (exact, at a cost): a pass-through factor the op mixes, judged by jit under
    Shardy with that dimension sharded."""
    parts = cs.partition_parts(ctx.subject.obj)
    if parts.rule is None:
        raise SkipCheck("no sharding_rule declared")
    factors = cs.rule_factors(parts.rule)
    if factors is None:
        raise SkipCheck("the sharding_rule is a callable; only rule strings and SdyShardingRule objects are checked")
    example = ctx.example()
    ranks = [np.ndim(x) for x in example], [np.ndim(r) for r in reference_outputs(ctx)]
    if ([len(m) for m in factors.operands], [len(m) for m in factors.results]) != ranks:
        raise SkipCheck(f"the sharding_rule {factors.text!r} maps {len(factors.operands)} operand(s) and "
                        f"{len(factors.results)} result(s) of ranks {[len(m) for m in factors.operands]} -> "
                        f"{[len(m) for m in factors.results]}; the op's are {ranks[0]} -> {ranks[1]}")
    for factor, mixing in mixed_factors(ctx).items():
        finding = _factor_verdict(ctx, parts, factors, factor, mixing)
        if finding is not None:
            yield finding
            return


def _factor_verdict(ctx: Context, parts: Any, factors: Any, factor: str, mixing: Mixing) -> Finding | None:
    splitting = [run for run in sharded_runs(ctx, shardy=True) if set(run.placement.sharded_dims) & set(mixing.ins)]
    runs = [run for run in splitting if run.error is None]
    if splitting and not runs:
        return None  # every such compilation failed: JXS002 / JXS006 / JXS001 report why
    wrong = [(run, found) for run in runs for found in [worst(run.outputs or [], reference_outputs(ctx))] if found]
    where = ", ".join(f"operand {i} dimension {d}" for i, d in mixing.ins)
    claim = (f"the sharding_rule {factors.text!r} of {ctx.subject.name} declares factor {factor!r} ({where}, size "
             f"{mixing.size}) as passing through to result {mixing.result} dimension {mixing.dim}, but the op mixes "
             f"values along it: applied to {mixing.pieces} slices along that dimension and concatenated, result "
             f"{mixing.result} has {mixing.cmp.describe()}")
    partitioner = "" if cs.uses_shardy() else (" (measured with Shardy enabled; this JAX partitions with GSPMD by "
                                              "default, where the rule takes effect once jax_use_shardy_partitioner "
                                              "is set)")
    fix = (f"Give the result dimension its own factor, `sharding_rule={_renamed(factors, factor)!r}`, so Shardy "
           "does not keep the operand's sharding of it on the result"
           + (f", or declare {factor!r} as needing replication: `def_partition(..., sharding_rule={factors.text!r}, "
              f"need_replication_factors=({factor!r},))`" if cs.supports_factor_kinds() else "")
           + (f"; and make `{callback_name(ctx, 'partition')}` replicate that dimension of its operand before "
              "lowering (the op needs it whole)." if wrong else "."))
    location = rule_location(parts.partition or parts.fun, factors.text)
    if wrong:
        run, (k, cmp) = wrong[0]
        return rules.SHARDING_RULE_NOT_PASSTHROUGH.finding(
            evidence=f"{claim}. Under jit with {run.placement.describe(ctx.specs)} on mesh "
            f"{describe_mesh(ctx.options)}, the partitioner keeps that dimension sharded and hands "
            f"`{callback_name(ctx, 'partition')}` per-device slices along it, and output {k} differs from the "
            f"unsharded result: {cmp.describe()}{partitioner}.",
            fix=fix, location=location)
    moved = [(run, moved_bytes(run.hlo)) for run in runs]
    cost = next(((run, m) for run, m in moved if m.per_device), None)
    devices = int(np.prod(sharding_options(ctx).mesh))
    if cost is not None:
        run, m = cost
        seen = (f"Results are exact under every input sharding that splits it ("
                f"{', '.join(r.placement.short for r in runs[:4])}): `{callback_name(ctx, 'partition')}` gathers "
                f"the dimension, and XLA reconciles its sharding with the rule's around every call: with "
                f"{run.placement.describe(ctx.specs)} on mesh {describe_mesh(ctx.options)}, {m.describe(devices)}")
    elif runs:
        return None  # exact, and nothing moves: the declaration costs nothing observable
    else:  # no evidence either way: said, not graded
        return rules.CHECK_SKIPPED.finding(
            reason=f"{claim}; no input sharding on mesh {describe_mesh(ctx.options)} splits that dimension"
            + ("" if cs.supports_sharding_rule() else " (this JAX has no Shardy partitioner)")
            + ", so whether the partitioner then computes it wrongly was not observed; pass --arg with that "
            "dimension divisible by a mesh axis", check="sharding-rule", location=location)
    return rules.SHARDING_RULE_GATHERS.finding(evidence=f"{claim}. {seen}{partitioner}.", fix=fix,
                                               location=location)


# ---------------------------------------------------------------------------------------------------------------
# JXS002 / JXS007: the result sharding `partition` returns against the declared one
# ---------------------------------------------------------------------------------------------------------------


def _dims_differ(want: Any, got: Any) -> list[int]:
    a, b = tuple(getattr(want, "spec", ()) or ()), tuple(getattr(got, "spec", ()) or ())
    n = max(len(a), len(b))
    a, b = a + (None,) * (n - len(a)), b + (None,) * (n - len(b))
    return [d for d in range(n) if a[d] != b[d]]


def _declared_mixed(ctx: Context, result: int, dims: list[int]) -> bool:
    """Whether the declaration is what is wrong: it keeps sharded a result dimension the op mixes along (Shardy:
    a pass-through factor of the rule; GSPMD: the same dimension of operand 0, where shapes line up)."""
    parts = cs.partition_parts(ctx.subject.obj)
    if cs.uses_shardy() and parts.rule is not None:
        return any(m.result == result and m.dim in dims for m in mixed_factors(ctx).values())
    example, reference = ctx.example(), reference_outputs(ctx)
    if not example or result >= len(reference) or np.shape(example[0]) != np.shape(reference[result]):
        return False
    return any(_mixes(ctx, parts.fun, [(0, d)], [(result, d)]) is not None for d in dims)


@check("partition-output-sharding", "sharding", {"custom_partitioning"})
def partition_output_sharding(ctx: Context) -> Iterator[Finding]:
    """JXS002 (a lowered function that does not fit, or results that differ) or JXS007 (exact, reconciled by
    collectives): the result sharding `partition` returns against the one the partitioner asked for."""
    runs = sharded_runs(ctx)
    parts = cs.partition_parts(ctx.subject.obj)
    name = callback_name(ctx, "partition")
    by_rule = cs.uses_shardy() and parts.rule is not None
    declared_by = "the `sharding_rule`" if by_rule else f"`{callback_name(ctx, 'infer_sharding_from_operands')}`"
    for run in runs:
        if run.error is not None and "Mismatch in result shapes" in str(run.error):
            yield rules.PARTITION_SHARDING_MISMATCH.finding(
                evidence=f"for {run.placement.describe(ctx.specs)} on mesh {describe_mesh(ctx.options)}, the function "
                f"`{name}` lowers returns per-device results that do not fit the result sharding it returns: JAX "
                f"reports {first_line(run.error)}",
                fix=f"In `{name}`, return as result sharding the sharding the lowered function's per-device result "
                    "actually has (its shape is the global shape divided by the mesh axes in that sharding).",
                location=callback_location(ctx))
            return
        for rec in run.callbacks:
            if rec.name != "partition" or rec.error is not None or len(rec.requested) != len(rec.returned):
                continue
            for k, (want, got) in enumerate(zip(rec.requested, rec.returned)):
                ndim = len(getattr(want, "spec", ()) or ()) or 8
                if same_sharding(want, got, ndim):
                    continue
                finding = _mismatch_verdict(ctx, run, k, want, got, name, declared_by)
                if finding is not None:
                    yield finding
                    return


def _mismatch_verdict(ctx: Context, run: Any, k: int, want: Any, got: Any, name: str, declared_by: str
                      ) -> Finding | None:
    shown_want, shown_got = show_spec(getattr(want, "spec", want)), show_spec(getattr(got, "spec", got))
    claim = (f"for {run.placement.describe(ctx.specs)} on mesh {describe_mesh(ctx.options)}, {declared_by} declares "
             f"result {k} sharded as {shown_want} but `{name}` returns {shown_got}")
    differs = worst(run.outputs or [], reference_outputs(ctx)) if run.error is None else None
    if differs is not None:
        return rules.PARTITION_SHARDING_MISMATCH.finding(
            evidence=f"{claim}, and output {differs[0]} then differs from the unsharded result: "
            f"{differs[1].describe()}.",
            fix=f"Make `{name}` return the result sharding {declared_by} declares (`result_shape.sharding` is "
                f"what the partitioner asked for) and lower a function whose per-device result has it.",
            location=callback_location(ctx))
    if run.error is not None:
        return None  # JXS001 / JXS006 report the failure itself
    if _declared_mixed(ctx, k, _dims_differ(want, got)):
        if "rule" in declared_by:
            return None  # the rule is at fault, and its check (JXS003/JXS008) reports it at the rule's line
        infer = callback_name(ctx, "infer_sharding_from_operands")
        at, fix = callback_location(ctx, "infer_sharding_from_operands"), (
            f"Make `{infer}` declare {shown_got} (replicate the dimensions the op mixes along, as `{name}` does), "
            "so the partitioner plans for the gather instead of re-slicing the result after every call.")
    else:
        at, fix = callback_location(ctx), (
            f"Make `{name}` return the result sharding {declared_by} declares (`result_shape.sharding` is what "
            f"the partitioner asked for) and lower on per-device slices, or change {declared_by} to declare "
            f"{shown_got} for this input.")
    moved = moved_bytes(run.hlo)
    if not moved.per_device:
        return None  # exact, and reconciled by re-slicing locally: no bytes move
    devices = int(np.prod(sharding_options(ctx).mesh))
    cost = f"XLA reconciles the two with collectives around the call: {moved.describe(devices)}"
    return rules.PARTITION_RESULT_RESHARDED.finding(
        evidence=f"{claim}. The results are exact (they equal the unsharded ones); {cost}.", fix=fix, location=at)


def _positions(mappings: Any, factor: str) -> list[tuple[int, int]]:
    return [(i, d) for i, mapping in enumerate(mappings) for d, dim in enumerate(mapping) if dim == (factor,)]


def _renamed(factors: Any, factor: str) -> str:
    used = {f for m in factors.operands + factors.results for dim in m for f in dim}
    new = next(c for c in "klmnopqrstuvwxyz" + "abcdefgh" if c not in used)
    text = factors.text
    lhs, rhs = text.split("->")
    return lhs + "->" + re.sub(rf"\b{re.escape(factor)}\b", new, rhs)


CHECKS: list[Check] = [partition_output_sharding, sharding_rule]
