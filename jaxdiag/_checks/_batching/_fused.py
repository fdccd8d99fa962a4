"""Every vmap variant of a subject in one compiled program: the fast path of `_evidence`.

Run one at a time, each variant compiles each operation of the rule again for its shapes (an XLA program per
operation and shape), so the variants cost more than a hand-written vmap-vs-loop test. Here all variants are traced
into one jaxpr while the spy validates every rule return (shapes, dims and dtypes are known at trace time), the
subject rule's outermost returns come back as extra outputs (the concrete values the true-axis measurement reads,
as when the rule ran eagerly), and that one program is compiled and run.

Eagerly, JAX computes a primitive bound at the top level with its impl and one bound inside a jit with its lowering;
the program keeps that split (`_compat.eager_semantics`): each variant computes what it computes when run alone.

`fused_runs` returns None whenever the fused run cannot stand for the eager runs: the spy saw a malformed return or
a rule that raised, tracing or running failed, or a reference is missing. `_evidence` also drops it when a variant
differs from the per-example reference; every finding then comes from the eager runs, with a clean spy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import jax
import numpy as np

from ... import _compat
from ..._harness import call_user, jaxdiag_code
from .._vmap_harness import Reference, Variant, vmapped
from ._spy import RuleCall, Spy, _Abort

ENABLED = True  # tests switch the fast path off to compare it with the eager runs
STATS = {"fused": 0, "fallback": 0}  # how often the fused run was used / dropped (bench and tests read them)


@dataclass
class FusedRun:
    """One variant's share of the fused program: its arguments, and after the run its outputs."""

    variant: Variant
    args: list[Any]
    expected: list[np.ndarray]
    tree: Any = None
    leaves: list[np.ndarray] = field(default_factory=list)
    width: int = 0  # outputs of the variant in the program's flat outputs
    tops: list[tuple[RuleCall, int]] = field(default_factory=list)  # calls whose outputs follow, with their count


def fused_runs(fn: Callable, reference: Reference, spy: Spy, spied: Sequence[Any], variants: Sequence[Variant]
               ) -> list[FusedRun] | None:
    """Every variant run in one program under `spy`, or None when that run cannot stand for the eager runs."""
    runs = _prepared(reference, variants) if ENABLED and _can_fuse(variants) else None
    if runs is None:
        return None
    flat = [a for run in runs for a in run.args]
    with _compat.intercept_batching_rules(spy.handlers(spied), guard=jaxdiag_code):
        try:
            traced = call_user(lambda: jax.make_jaxpr(_program(fn, spy, runs))(*flat))
        except _Abort:  # a malformed return or a rule that raised: the eager runs report it
            return None
    if traced.error is not None or any(c.problems or c.error is not None for c in spy.calls):
        return None
    program = _compiled(traced.value)
    if program is None:
        return None
    ran = call_user(lambda: jax.block_until_ready(program(*flat)))
    if ran.error is not None:
        return None
    _distribute(runs, list(ran.value))
    return runs


def _can_fuse(variants: Sequence[Variant]) -> bool:
    """The program is jitted: only when the variants themselves may run under jit (jit(vmap) among them, or all
    under jit already)."""
    return bool(variants) and (any(v.mode == "jit(vmap)" for v in variants) or all(v.under_jit for v in variants))


def _prepared(reference: Reference, variants: Sequence[Variant]) -> list[FusedRun] | None:
    runs = []
    for variant in variants:
        expected = reference.expected(variant)
        if isinstance(expected, BaseException):  # the eager runs say so
            return None
        args = reference.batched_args(variant)
        if variant.mode == "constants":
            args = [np.zeros((variant.size,), np.float32), *args]
        runs.append(FusedRun(variant, args, expected))
    return runs


def _program(fn: Callable, spy: Spy, runs: list[FusedRun]) -> Callable[..., list]:
    """The traced function: each variant in turn, the spy told which one is tracing."""

    def program(*flat: Any) -> list:
        outs: list = []
        start = 0
        for run in runs:
            spy.variant = run.variant
            seen = len(spy.calls)
            leaves, run.tree = jax.tree_util.tree_flatten(_traceable(fn, run.variant)(*flat[start:start + len(
                run.args)]))
            start += len(run.args)
            run.width = len(leaves)
            outs += leaves
            for call in spy.calls[seen:]:
                returned = _returned_outputs(call)
                if returned is not None:
                    run.tops.append((call, len(returned)))
                    outs += returned
        return outs

    return program


def _traceable(fn: Callable, variant: Variant) -> Callable:
    """`vmapped(fn, variant)`, its jits plain `jax.jit` (compiler options are refused inside another trace)."""
    if variant.under_jit:
        return jax.jit(_traceable(fn, replace(variant, under_jit=False)))
    if variant.mode == "jit(vmap)":
        return jax.jit(jax.vmap(fn, in_axes=variant.axes))
    return vmapped(fn, variant)


def _returned_outputs(call: RuleCall) -> list | None:
    """The outputs the subject's rule returned at the variant's outer level, where the rule sees concrete arrays
    when run eagerly (the values the true-axis measurement compares)."""
    if not (call.top and call.variant.concrete and isinstance(call.result, (tuple, list)) and len(call.result) == 2):
        return None
    outs = call.result[0]
    if call.prim.multiple_results:
        return list(outs) if isinstance(outs, (tuple, list)) else None
    return [outs]


def _distribute(runs: list[FusedRun], outs: list) -> None:
    """The program's flat outputs back to each variant, and the rule's returned outputs into its calls."""
    at = 0
    for run in runs:
        run.leaves = [np.asarray(x) for x in outs[at:at + run.width]]
        at += run.width
        for call, count in run.tops:
            values, at = outs[at:at + count], at + count
            returned, dims = call.result
            if call.prim.multiple_results:
                call.result = (tuple(values) if isinstance(returned, tuple) else list(values), dims)
            else:
                call.result = (values[0], dims)


@dataclass
class _Program:
    """A jitted evaluation of a traced program, and what its text does not say: the primitives, impls, lowerings
    and callables in its equations (compared by identity) and its constants (by value)."""

    identities: list[Any]
    consts: list[Any]
    call: Callable


_PROGRAMS: dict[str, list[_Program]] = {}  # by the program's text; at most _KEEP programs in all
_KEEP = 16


def _compiled(closed: Any) -> Callable | None:
    """The jitted eager-semantics evaluation of `closed`; the one of an earlier check when its program is the very
    same (a re-check or a fresh draw of the same subject), so that JAX's jit cache spares compiling it again, as
    eager operations are cached per shape."""
    evaluate = _compat.eager_semantics(closed, _compat.user_impl)
    if evaluate is None:
        return None
    text, identities = str(closed.jaxpr), _identities(closed)
    for known in _PROGRAMS.get(text, []):
        if _same_objects(known.identities, identities) and _same_consts(known.consts, list(closed.consts)):
            return known.call
    if sum(len(v) for v in _PROGRAMS.values()) >= _KEEP:
        _PROGRAMS.clear()
    call = _compat.own_jit(evaluate)
    _PROGRAMS.setdefault(text, []).append(_Program(identities, list(closed.consts), call))
    return call


def _identities(closed: Any) -> list[Any]:
    out: list[Any] = []
    rules: dict[int, tuple[Any, Any]] = {}  # per primitive: a program of a big rule repeats a few primitives 50k times
    for eqn in _compat.iter_eqns(closed):
        prim = eqn.primitive
        known = rules.get(id(prim))
        if known is None:
            known = rules[id(prim)] = (_compat.user_impl(prim), _compat.lowering_rule(prim))
        out += [prim, *known]
        out += [v for v in eqn.params.values() if callable(v) and not isinstance(v, (_compat.Jaxpr,
                                                                                     _compat.ClosedJaxpr))]
    return out


def _same_objects(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


def _same_consts(a: list[Any], b: list[Any]) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        try:
            left, right = np.asarray(x), np.asarray(y)
        except (TypeError, ValueError):  # not an array NumPy can read (a PRNG key): never the same
            return False
        if left.dtype != right.dtype or left.shape != right.shape or not np.array_equal(left, right):
            return False
    return True
