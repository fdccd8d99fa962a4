"""Integer inputs used as indices are also drawn at and beyond their valid range.

gather and dynamic_slice clamp an index outside the operand, scatter drops it, jnp indexing wraps a negative one:
a batching rule that builds its own gather (a different `mode`, an explicit `clip`, an int8 iota) can agree with
the per-example impl on every in-range index and differ on the others. Random integers in a small range never reach
`== size` or `> size` of a long axis, so such a rule passed. The inputs that flow into the index operand of a
gather, scatter, dynamic_slice or dynamic_update_slice in the subject's own computation (the primitive's impl, the
function) get four examples at `size`, `size + 1`, `-1` and `-(size + 1)` (each kept only if the per-example call
accepts it: an impl that validates its indices is not given what it refuses).

A declared value domain is a contract: an operand given as `i8[]@0..4` is never probed beyond it. A finding that
only the probes show (re-running its checks without them, it is gone) is reported as JXB016, a warning naming the
values: callers that never pass an out-of-range index never see it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection
from typing import Any

import jax
import numpy as np

from .. import _compat
from .. import _rules as rules
from .._core._report import Finding
from ._base import Context, Options, Subject
from .._harness.boundary import call_user
from .._harness.cache import SubjectCache

# run_checks(subject, options, cache, check names) -> {check name: its findings} (the engine's)
RunChecks = Callable[[Subject, Options, SubjectCache, Collection[str]], dict[str, list[Finding]]]


def index_bounds(ctx: Context) -> dict[int, int]:
    """Spec position -> the largest dimension that input indexes in the subject's computation (cached)."""
    if ctx.cache.index_bounds is None:
        ctx.cache.index_bounds = _trace_bounds(ctx)
    return ctx.cache.index_bounds


def _trace_bounds(ctx: Context) -> dict[int, int]:
    subject = ctx.subject
    if not any(np.issubdtype(s.dtype, np.integer) and s.key is None for s in subject.specs):
        return {}
    if subject.kind == "primitive":
        impl = _compat.impl(subject.obj)
        if impl is None:
            return {}
        fn: Callable = functools.partial(impl, **subject.params)
    else:
        fn = subject.call
    traced = call_user(lambda: jax.make_jaxpr(fn)(*ctx.example()))
    if traced.error is not None:  # an impl that cannot be traced (NumPy inside): no index information
        return {}
    return _compat.index_operand_bounds(traced.value)


def widen_index_examples(ctx: Context, fn: Callable, pool: list[np.ndarray]) -> list[np.ndarray]:
    """`pool` (one column of examples per argument, example 0 first) with examples 1-4 of every index input set to
    `size`, `size + 1`, `-1` and `-(size + 1)` where one call of `fn` on that example accepts the value."""
    if ctx.cache.index_probes_off:
        return pool
    # an operand with a declared domain (`i8[]@0..4`) is only ever drawn inside it
    bounds = {k: size for k, size in index_bounds(ctx).items() if k < len(ctx.specs) and not ctx.specs[k].domain}
    if not bounds:
        return pool
    pool = [column.copy() for column in pool]
    count = pool[0].shape[0] if pool else 0
    for k, size in sorted(bounds.items()):
        column = pool[k]
        info = np.iinfo(column.dtype)
        values = [v for v in (size, size + 1, -1, -(size + 1)) if info.min <= v <= info.max]
        for b, value in zip(range(1, count), values):
            candidate = np.full(column.shape[1:], value, column.dtype)
            args = [candidate if i == k else c[b] for i, c in enumerate(pool)]
            if call_user(lambda: _materialize(fn(*args))).error is None:  # noqa: B023 - called at once
                column[b] = candidate
                ctx.cache.index_probes.setdefault(b, {})[k] = value
    return pool


def grade_out_of_range(subject: Subject, options: Options, cache: SubjectCache, findings: list[Finding],
                       by_check: dict[str, list[Finding]], run_checks: RunChecks) -> list[Finding]:
    """`findings` with each batching error that only the out-of-range index probes show replaced by JXB016 (a
    warning naming the values): the checks that reported errors run again, on the same seed, without the probes."""
    if not cache.index_probes:
        return findings
    suspects = {name: {f.code for f in group if f.severity == "error" and f.code not in _STRUCTURAL}
                for name, group in by_check.items()}
    suspects = {name: codes for name, codes in suspects.items() if codes and name.startswith("batching")}
    if not suspects:
        return findings
    fresh = SubjectCache(trace=cache.trace, nested_subjects=list(cache.nested_subjects), example=cache.example,
                         observed=cache.observed, abstract_output=cache.abstract_output,
                         index_bounds=cache.index_bounds, index_probes_off=True)
    again = run_checks(subject, options, fresh, list(suspects))
    still = {f.code for group in again.values() for f in group if f.severity == "error"}
    gone = set().union(*suspects.values()) - still
    if not gone:
        return findings
    values = _probe_text(subject, cache.index_probes)
    spec = _declared_example(subject, cache.index_probes, cache.index_bounds or {})
    return [rules.OUT_OF_RANGE_INDEX_ONLY.finding(code=f.code, values=values, evidence=f.message, fix=f.fix,
                                                  spec=spec, location=f.location) if f.code in gone else f
            for f in findings]


# Findings that do not depend on the values drawn (a rule's return structure, an exception): never graded here.
_STRUCTURAL = frozenset(r.code for r in rules.iter_rules() if not r.depends_on_values)


def _probe_text(subject: Subject, probes: dict[int, dict[int, int]]) -> str:
    by_arg: dict[int, list[int]] = {}
    for values in probes.values():
        for k, value in values.items():
            by_arg.setdefault(k, []).append(value)
    return "; ".join(f"argument {k} = {', '.join(map(str, vals))}" for k, vals in sorted(by_arg.items()))


def _declared_example(subject: Subject, probes: dict[int, dict[int, int]], bounds: dict[int, int]) -> str:
    """A SPEC declaring the first probed operand's in-range domain (`i32[]@0..5` for an axis of 6), for the fix."""
    k = min(k for values in probes.values() for k in values)
    return f"{subject.specs[k]}@0..{max(bounds.get(k, 2) - 1, 1)}"


def _materialize(out: Any) -> Any:
    """Block on the outputs, so an error raised asynchronously still belongs to this call."""
    return jax.block_until_ready(out)
