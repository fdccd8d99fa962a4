"""Integer inputs used as indices are also drawn at and beyond their valid range.

gather and dynamic_slice clamp an index outside the operand, scatter drops it, jnp indexing wraps a negative one:
a batching rule that builds its own gather (a different `mode`, an explicit `clip`, an int8 iota) can agree with
the per-example impl on every in-range index and differ on the others. Random integers in a small range never reach
`== size` or `> size` of a long axis, so such a rule passed. The inputs that flow into the index operand of a
gather, scatter, dynamic_slice or dynamic_update_slice in the subject's own computation (the primitive's impl, the
function) get four examples at `size`, `size + 1`, `-1` and `-(size + 1)` (each kept only if the per-example call
accepts it: an impl that validates its indices is not given what it refuses).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from .. import _compat
from ._base import Context
from ._harness.boundary import call_user


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
    bounds = index_bounds(ctx)
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
    return pool


def _materialize(out: Any) -> Any:
    """Block on the outputs, so an error raised asynchronously still belongs to this call."""
    return jax.block_until_ready(out)
