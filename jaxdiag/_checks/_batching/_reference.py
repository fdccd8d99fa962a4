"""The vmap variants and the per-example reference of the batching checks.

`Variant` is one way of running `vmap` (in_axes, batch size, nesting, jit placement); `axes_variants` chooses the
in_axes so that a mislabelled axis cannot pass by accident (a batch size equal to no dimension, the batch axis
first, last and in the middle, each argument unbatched, pairwise combinations). `Reference` is the subject applied
to each example eagerly: the trusted result every vmap run is compared with.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._inputs import ArgSpec, draw
from .._base import Context
from .._harness import call_user
from .._shared import (
    flat_outputs,
)

Aval = tuple[tuple[int, ...], np.dtype]


# ---------------------------------------------------------------------------------------------------------------
# in_axes variants
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One way of calling vmap: per-argument axes (non-negative, None = unbatched), batch size and mode."""

    axes: tuple[int | None, ...]
    size: int
    mode: str = "eager"  # eager | user | jit(vmap) | vmap(jit) | nested | constants
    inner: int = 0  # nested: the inner vmap's size; the inner axes are each argument's last axis
    out_axes: Any = 0
    user_in_axes: Any = None  # user mode: the in_axes exactly as given
    under_jit: bool = False  # the whole call jitted (a primitive without impl cannot run eagerly)

    @property
    def pattern(self) -> frozenset[int]:
        return frozenset(i for i, a in enumerate(self.axes) if a is None)

    @property
    def single_level(self) -> bool:
        return self.mode != "nested"

    @property
    def concrete(self) -> bool:
        """The rule sees concrete arrays (not tracers) in this mode."""
        return self.mode in ("eager", "user") and not self.under_jit

    def in_axes_text(self) -> str:
        if self.mode == "user":
            return _axes_repr(self.user_in_axes)
        return _axes_repr(self.axes[0] if len(self.axes) == 1 else self.axes)

    def describe(self, name: str) -> str:
        axes = self.in_axes_text()
        out = "" if self.out_axes == 0 else f", out_axes={_axes_repr(self.out_axes)}"
        if self.mode == "nested":
            inner = _axes_repr(tuple(-1 for _ in self.axes) if len(self.axes) > 1 else -1)
            outer = _axes_repr(tuple(0 for _ in self.axes) if len(self.axes) > 1 else 0)
            return (f"nested `jax.vmap(jax.vmap({name}, in_axes={inner}), in_axes={outer})` with batch sizes "
                    f"{self.size}x{self.inner}")
        if self.mode == "constants":
            return (f"`jax.vmap(lambda t: {name}(*args), in_axes=0)` with batch size {self.size}, every input of the "
                    "primitive unbatched (as for constants inside a vmapped function)")
        if self.mode == "jit(vmap)":
            return f"`jax.jit(jax.vmap({name}, in_axes={axes}))` with batch size {self.size}"
        if self.mode == "vmap(jit)":
            return f"`jax.vmap(jax.jit({name}), in_axes={axes})` with batch size {self.size}"
        if self.under_jit:
            return f"`jax.jit(jax.vmap({name}, in_axes={axes}{out}))` with batch size {self.size}"
        return f"`jax.vmap({name}, in_axes={axes}{out})` with batch size {self.size}"


def _axes_repr(axes: Any) -> str:
    if isinstance(axes, list):
        return "[" + ", ".join(_axes_repr(a) for a in axes) + "]"
    if isinstance(axes, tuple):
        inner = ", ".join(_axes_repr(a) for a in axes)
        return f"({inner},)" if len(axes) == 1 else f"({inner})"
    return repr(axes)


def axis_choices(spec: ArgSpec) -> list[int | None]:
    """First, last and a middle axis of the batched argument (rank + 1 axes), then unbatched."""
    rank = len(spec.shape)
    choices: list[int | None] = [0]
    if rank >= 1:
        choices.append(rank)
    if rank >= 2:
        choices.append((rank + 1) // 2)
    choices.append(None)
    return choices


def axes_variants(specs: Sequence[ArgSpec]) -> list[tuple[int | None, ...]]:
    """all-0, all-last, all-middle, each argument unbatched in turn, then pairwise coverage of every two
    arguments' choices. Greedy covering keeps the count at most quadratic in the number of arguments."""
    n = len(specs)
    choices = [axis_choices(s) for s in specs]
    out: list[tuple[int | None, ...]] = []

    def add(axes: tuple[int | None, ...]) -> None:
        if any(a is not None for a in axes) and axes not in out:
            out.append(axes)

    add(tuple(0 for _ in specs))
    add(tuple(c[1] if c[1] is not None else 0 for c in choices))
    add(tuple(c[2] if len(c) > 3 else 0 for c in choices))
    if n >= 2:
        for i in range(n):
            add(tuple(None if j == i else 0 for j in range(n)))
    if n < 2:
        return out
    # pairs of first / last / unbatched; the middle axis is covered by the all-middle variant
    choices = [[c[0], c[1], None] if len(c) > 2 else c for c in choices]
    uncovered = {(i, a, j, b) for i, j in itertools.combinations(range(n), 2) for a in choices[i] for b in choices[j]
                 if not (n == 2 and a is None and b is None)}
    for axes in out:
        uncovered -= _pairs(axes)
    while uncovered:
        i, a, j, b = min(uncovered, key=lambda p: (p[0], p[2], str(p[1]), str(p[3])))
        chosen: list[int | None] = [0] * n
        chosen[i], chosen[j] = a, b
        for k in range(n):
            if k in (i, j):
                continue
            chosen[k] = max(choices[k], key=lambda c: (  # noqa: B023 - called at once, inside this iteration
                len(_pairs(tuple(chosen[:k] + [c] + chosen[k + 1:])) & uncovered), c is not None))
        if all(x is None for x in chosen):
            chosen[next(k for k in range(n) if k not in (i, j))] = 0
        before = len(uncovered)
        uncovered -= _pairs(tuple(chosen))
        add(tuple(chosen))
        if len(uncovered) == before:  # cannot happen, but never loop forever
            uncovered.discard((i, a, j, b))
    return out


def _pairs(axes: tuple[int | None, ...]) -> set[tuple]:
    return {(i, axes[i], j, axes[j]) for i, j in itertools.combinations(range(len(axes)), 2)}


# ---------------------------------------------------------------------------------------------------------------
# The per-example reference
# ---------------------------------------------------------------------------------------------------------------


class Reference:
    """A pool of distinct examples and the subject's eager output on each (trusted, computed once per pattern).

    Example 0 is `ctx.example()`, shared with the registration checks. For a variant where some arguments are
    unbatched, those arguments take example 0's value in every example, so each pattern of unbatched arguments
    has its own loop (cached).
    """

    def __init__(self, ctx: Context, fn: Callable, count: int):
        self.subject = ctx.subject
        self.fn = fn
        self.count = count
        rng = np.random.default_rng(zlib.crc32(f"{ctx.options.seed}:{ctx.subject.seed_key}:pool".encode()))
        self.pool = [self._column(x, s, rng) for x, s in zip(ctx.example(), ctx.specs)]
        self._outputs: dict[frozenset[int], list[list[np.ndarray]] | BaseException] = {}
        self.structure: Any = None

    def _column(self, example: Any, spec: ArgSpec, rng: np.random.Generator) -> np.ndarray:
        first = np.asarray(example)
        if first.dtype.kind in "iu" and np.unique(first).size > 1:
            # integers are often indices or counts: permute the example's values rather than draw new ones
            rest = [rng.permutation(first.reshape(-1)).reshape(first.shape) for _ in range(self.count - 1)]
        else:
            rest = list(draw(spec, rng, self.subject.domain, (self.count - 1,)))
        return np.stack([first, *rest]).astype(first.dtype)

    def args(self, pattern: frozenset[int], b: int) -> list[np.ndarray]:
        return [column[0] if i in pattern else column[b] for i, column in enumerate(self.pool)]

    def outputs(self, pattern: frozenset[int], count: int) -> list[list[np.ndarray]] | BaseException:
        """Per example (the first `count`), the flat outputs; or the exception the loop raised."""
        have = self._outputs.get(pattern)
        if isinstance(have, BaseException) or (have is not None and len(have) >= count):
            return have if isinstance(have, BaseException) else have[:count]
        done = list(have or [])
        for b in range(len(done), count):
            args = self.args(pattern, b)
            one = call_user(lambda: flat_outputs(self.subject, self.fn(*args)))  # noqa: B023 - called at once
            if one.error is not None:  # the user's code on one example: not what a batching check reports
                self._outputs[pattern] = one.error
                return one.error
            leaves, structure = one.value
            self.structure = self.structure if self.structure is not None else structure
            done.append(leaves)
        self._outputs[pattern] = done
        return done

    def batched_args(self, variant: Variant) -> list[np.ndarray]:
        if variant.mode == "nested":
            n = variant.size * variant.inner
            return [np.moveaxis(column[:n].reshape((variant.size, variant.inner) + column.shape[1:]), 1, -1)
                    for column in self.pool]
        out = []
        for column, axis in zip(self.pool, variant.axes):
            out.append(column[0] if axis is None else np.moveaxis(column[:variant.size], 0, axis))
        return out

    def expected(self, variant: Variant) -> list[np.ndarray] | BaseException:
        """The stacked loop outputs a variant must reproduce (batch axes in front)."""
        count = variant.size * (variant.inner or 1)
        per_example = self.outputs(variant.pattern, count)
        if isinstance(per_example, BaseException):
            return per_example
        stacked = [np.stack([ex[k] for ex in per_example]) for k in range(len(per_example[0]))]
        if variant.mode == "nested":
            stacked = [s.reshape((variant.size, variant.inner) + s.shape[1:]) for s in stacked]
        return stacked

    def constant(self, pattern: frozenset[int], k: int, count: int) -> bool | None:
        """Whether output k is bitwise identical for the first `count` examples of `pattern`."""
        per_example = self.outputs(pattern, count)
        if isinstance(per_example, BaseException) or k >= len(per_example[0]):
            return None
        first = per_example[0][k]
        return all(np.array_equal(ex[k], first, equal_nan=first.dtype.kind in "fc") for ex in per_example[1:])
