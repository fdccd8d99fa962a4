"""The vmap harness shared by the batching, custom_vmap and ffi checks: which vmaps to run, the arrays to hand
them, and the per-example reference every run is compared with.

`Variant` is one way of running `vmap` (in_axes, batch size, nesting, jit placement, out_axes); `vmapped` builds
it. Two enumerations of in_axes: `axes_variants` for batching rules, chosen so that a mislabelled axis cannot pass
by accident (a batch size equal to no dimension, the batch axis first, last and in the middle, each argument
unbatched, pairwise combinations), and `loop_variants`, the shorter list the custom_vmap and ffi checks run (their
rules see the batch axis moved to the front by JAX). `Reference` is the subject applied to each example eagerly,
through the boundary: the trusted result every vmap run is compared with.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _compat
from .._loading._inputs import ArgSpec, draw
from ._shared import flat_outputs, jitted
from .._harness.boundary import call_user

if TYPE_CHECKING:
    from ._base import Context, Subject

Aval = tuple[tuple[int, ...], np.dtype]


# ---------------------------------------------------------------------------------------------------------------
# in_axes variants
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One way of calling vmap: per-argument axes (non-negative, None = unbatched), batch size and mode."""

    axes: tuple[int | None, ...]  # nested: the inner vmap's in_axes (the outer vmap's are all 0)
    size: int
    mode: str = "eager"  # eager | user | jit(vmap) | vmap(jit) | nested | constants
    inner: int = 0  # nested: the inner vmap's size
    out_axes: Any = 0
    user_in_axes: Any = None  # user mode: the in_axes exactly as given
    under_jit: bool = False  # the whole call jitted (a primitive without impl cannot run eagerly)

    @property
    def pattern(self) -> frozenset[int]:
        return frozenset(i for i, a in enumerate(self.axes) if a is None)

    @property
    def in_batched(self) -> list[bool]:
        return [a is not None for a in self.axes]

    @property
    def lead(self) -> tuple[int, ...]:
        """The batch axes in front of the per-example shape: (outer, inner) when nested."""
        return (self.size, self.inner) if self.mode == "nested" else (self.size,)

    @property
    def outer_axes(self) -> tuple[int | None, ...]:
        """nested: the outer vmap's in_axes (0 for every argument the inner vmap batches)."""
        return tuple(None if a is None else 0 for a in self.axes)

    @property
    def single_level(self) -> bool:
        return self.mode != "nested"

    @property
    def concrete(self) -> bool:
        """The rule sees concrete arrays (not tracers) in this mode."""
        return self.mode in ("eager", "user") and not self.under_jit

    def in_axes_text(self) -> str:
        if self.mode == "user":
            return axes_repr(self.user_in_axes)
        return axes_repr(self.axes[0] if len(self.axes) == 1 else self.axes)

    def describe(self, name: str) -> str:
        axes = self.in_axes_text()
        out = "" if self.out_axes == 0 else f", out_axes={axes_repr(self.out_axes)}"
        if self.mode == "nested":
            inner = axes_repr(tuple(None if a is None else -1 for a in self.axes) if len(self.axes) > 1 else -1)
            outer = axes_repr(self.outer_axes if len(self.axes) > 1 else 0)
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

    def phrase(self, name: str) -> str:
        """The plain wording of the custom_vmap and ffi messages (eager and nested variants only)."""
        axes = self.axes[0] if len(self.axes) == 1 else self.axes
        if self.mode == "nested":
            return (f"vmap({name}, in_axes={axes!r}) over a batch of {self.inner}, nested inside an outer vmap of "
                    f"{self.size}")
        return f"vmap({name}, in_axes={axes!r}) over a batch of {self.size}"


def axes_repr(axes: Any) -> str:
    """in_axes/out_axes/dims as the user writes them: `(0, None)`, `(1,)`, `[0, 0]`."""
    if isinstance(axes, list):
        return "[" + ", ".join(axes_repr(a) for a in axes) + "]"
    if isinstance(axes, tuple):
        inner = ", ".join(axes_repr(a) for a in axes)
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


EACH_ALONE_MAX = 8  # beyond this many arguments, "each unbatched in turn" is left to the pairwise covering


def axes_variants(specs: Sequence[ArgSpec]) -> list[tuple[int | None, ...]]:
    """all-0, all-last, all-middle, each argument unbatched in turn, then pairwise coverage of every two
    arguments' choices. Greedy covering keeps the count at most quadratic in the number of arguments.

    A primitive with many operands (a flattened pytree: a quadrature's 21 leaves) skips the one-at-a-time step: it
    costs one variant per operand, each compiling the whole rule again, while the pairwise covering still leaves
    every operand unbatched beside every other's batched and unbatched choices, in a handful of variants."""
    n = len(specs)
    choices = [axis_choices(s) for s in specs]
    out: list[tuple[int | None, ...]] = []

    def add(axes: tuple[int | None, ...]) -> None:
        if any(a is not None for a in axes) and axes not in out:
            out.append(axes)

    add(tuple(0 for _ in specs))
    add(tuple(c[1] if c[1] is not None else 0 for c in choices))
    add(tuple(c[2] if len(c) > 3 else 0 for c in choices))
    if 2 <= n <= EACH_ALONE_MAX:
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


def _unbatched_subsets(n: int) -> list[tuple[int, ...]]:
    """Which arguments to leave unbatched: every proper subset for up to 3 arguments, else singles and pairs."""
    if n <= 3:
        return [s for k in range(1, n) for s in itertools.combinations(range(n), k)]
    return [s for k in (1, 2) for s in itertools.combinations(range(n), k)]


def loop_variants(n_args: int, batch: int, outer: int, user_axes: Any = None, batch_one: bool = True) -> list[Variant]:
    """The custom_vmap and ffi variants: the user's --in-axes first when given, all 0, all -1, each unbatched subset,
    batch size 1, and a vmap of `outer` around one of `batch` (every in_axes 0)."""
    out: list[Variant] = []
    if user_axes is not None:
        axes = tuple(user_axes) if isinstance(user_axes, (tuple, list)) else (user_axes,) * n_args
        if len(axes) == n_args and any(a is not None for a in axes):
            out.append(Variant(axes, batch))
    out.append(Variant((0,) * n_args, batch))
    out.append(Variant((-1,) * n_args, batch))
    for unbatched in _unbatched_subsets(n_args):
        out.append(Variant(tuple(None if i in unbatched else 0 for i in range(n_args)), batch))
    if batch_one:
        out.append(Variant((0,) * n_args, 1))
    out.append(Variant((0,) * n_args, outer, mode="nested", inner=batch))
    return list(dict.fromkeys(out))


def vmapped(fn: Callable, variant: Variant) -> Callable:
    """`fn` under the variant's vmap(s); a "constants" variant takes a leading dummy batched argument."""
    if variant.under_jit:
        return _compat.own_jit(vmapped(fn, replace(variant, under_jit=False)))
    if variant.mode == "user":
        return jax.vmap(fn, in_axes=variant.user_in_axes, out_axes=variant.out_axes)
    axes = variant.axes
    if variant.mode == "nested":
        return jax.vmap(jax.vmap(fn, in_axes=axes), in_axes=variant.outer_axes)
    if variant.mode == "jit(vmap)":
        return _compat.own_jit(jax.vmap(fn, in_axes=axes))
    if variant.mode == "vmap(jit)":
        return jax.vmap(jitted(fn), in_axes=axes)
    if variant.mode == "constants":
        return lambda t, *args: jax.vmap(lambda _: fn(*args))(t)
    return jax.vmap(fn, in_axes=axes)


def first_line(exc: BaseException) -> str:
    """`Type: first line of the message` without a trailing period, for embedding in a sentence."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0].rstrip('.')}" if text else type(exc).__name__


# ---------------------------------------------------------------------------------------------------------------
# The per-example reference
# ---------------------------------------------------------------------------------------------------------------


class Reference:
    """A pool of distinct examples and the subject's eager output on each (trusted, computed once per pattern).

    `pool` holds one column per argument: the examples stacked on a leading axis. For a variant where some
    arguments are unbatched, those arguments take example 0's value in every example, so each pattern of
    unbatched arguments has its own loop (cached). What the loop raises is the user's code failing on one example:
    returned, never raised, for the caller to skip on.
    """

    def __init__(self, subject: Subject, fn: Callable, pool: list[np.ndarray], count: int):
        self.subject = subject
        self.fn = fn
        self.pool = pool
        self.count = count  # examples in the pool
        self._outputs: dict[frozenset[int], list[list[np.ndarray]] | BaseException] = {}
        self.structure: Any = None

    @classmethod
    def drawn(cls, ctx: Context, fn: Callable, count: int) -> Reference:
        """A pool of `count` examples; example 0 is `ctx.example()`, shared with the registration checks."""
        rng = np.random.default_rng(zlib.crc32(f"{ctx.options.seed}:{ctx.subject.seed_key}:pool".encode()))
        pool = [_column(x, s, rng, ctx.subject.domain, count) for x, s in zip(ctx.example(), ctx.specs)]
        from ._index_range import widen_index_examples

        return cls(ctx.subject, fn, widen_index_examples(ctx, fn, pool), count)

    @classmethod
    def stacked(cls, subject: Subject, fn: Callable, stacked: list[np.ndarray], variant: Variant) -> Reference:
        """The examples the caller drew with the variant's batch axes in front (`Variant.lead`)."""
        n = len(variant.lead)
        return cls(subject, fn, [x.reshape((-1,) + x.shape[n:]) for x in stacked], int(np.prod(variant.lead)))

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

    def repeats(self, variant: Variant) -> bool:
        """Whether the loop gives the outputs `variant` is compared with when run once more on the same examples:
        False for a subject whose outputs are not a function of its inputs (a kernel leaving part of its output
        buffer unwritten, a callback keeping state)."""
        first = self.expected(variant)  # cached: the run the comparison used
        again = Reference(self.subject, self.fn, self.pool, self.count).expected(variant)
        if isinstance(first, BaseException) or isinstance(again, BaseException):
            return True  # failing on an example is reported by the checks that run it
        return all(np.array_equal(a, b, equal_nan=True) for a, b in zip(first, again))

    def batched_args(self, variant: Variant) -> list[Any]:
        """The arrays handed to `vmapped(fn, variant)`: the batch axis at each argument's in_axes. Device arrays,
        as a user's vmap gets them: a NumPy array reaching jnp code under vmap is converted there, one compiled
        conversion per shape and variant."""
        if variant.mode == "nested":
            n = variant.size * variant.inner
            # an argument the inner vmap batches is batched by both; its inner batch axis goes to its inner in_axes
            return [_compat.device_array(column[0] if axis is None else
                                         np.moveaxis(column[:n].reshape(variant.lead + column.shape[1:]), 1, 1 + axis))
                    for column, axis in zip(self.pool, variant.axes)]
        out = []
        for column, axis in zip(self.pool, variant.axes):
            out.append(_compat.device_array(column[0] if axis is None else
                                            np.ascontiguousarray(np.moveaxis(column[:variant.size], 0, axis))))
        return out

    def expected(self, variant: Variant) -> list[np.ndarray] | BaseException:
        """The stacked loop outputs a variant must reproduce (batch axes in front)."""
        count = variant.size * (variant.inner or 1)
        per_example = self.outputs(variant.pattern, count)
        if isinstance(per_example, BaseException):
            return per_example
        stacked = [np.stack([ex[k] for ex in per_example]) for k in range(len(per_example[0]))]
        if variant.mode == "nested":
            stacked = [s.reshape(variant.lead + s.shape[1:]) for s in stacked]
        return stacked

    def constant(self, pattern: frozenset[int], k: int, count: int) -> bool | None:
        """Whether output k is bitwise identical for the first `count` examples of `pattern`."""
        per_example = self.outputs(pattern, count)
        if isinstance(per_example, BaseException) or k >= len(per_example[0]):
            return None
        first = per_example[0][k]
        return all(_same(ex[k], first) for ex in per_example[1:])


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal values, NaN equal to NaN for every floating type as JAX categorizes it (`jnp.inexact`: bfloat16 and
    the float8/float4 types too, whatever NumPy kind ml_dtypes gives them); those NumPy cannot test for NaN natively
    are compared widened to float32, which holds every value of theirs exactly."""
    inexact = np.dtype(a.dtype) != _compat.float0 and bool(jnp.issubdtype(a.dtype, jnp.inexact))
    if inexact and a.dtype.kind not in "fc":
        a, b = a.astype(np.float32), b.astype(np.float32)
    return bool(np.array_equal(a, b, equal_nan=inexact))


def _column(example: Any, spec: ArgSpec, rng: np.random.Generator, domain: Any, count: int) -> np.ndarray:
    first = np.asarray(example)
    if first.dtype.kind in "iu" and np.unique(first).size > 1:
        rest = _integer_examples(first, rng, count - 1)
    else:
        rest = list(draw(spec, rng, domain, (count - 1,)))
    return np.stack([first, *rest]).astype(first.dtype)


def _integer_examples(first: np.ndarray, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """`count` integer examples in example 0's value range (integers are often indices or counts: the range the
    example ran with is kept), each with a multiset of values different from every earlier one, so that sums,
    maxima and order statistics differ between examples: permutations of example 0 would let a max/sum/any
    reduction over the wrong axis agree with the loop. Offsets (a non-decreasing vector) stay offsets."""
    low, high = int(first.min()), int(first.max())
    seen = {tuple(np.sort(first.reshape(-1)))}
    # non-decreasing from its first value to its last (row pointers of a sparse matrix, segment offsets): the
    # examples keep both ends and the order, or they describe no structure at all (a pointer past the data)
    offsets = first.ndim == 1 and first.size >= 3 and bool(np.all(np.diff(first) >= 0))

    def draw_one() -> np.ndarray:
        if not offsets:
            return rng.integers(low, high + 1, size=first.shape)
        inner = np.sort(rng.integers(low, high + 1, size=first.size - 2))
        return np.concatenate([first[:1], inner, first[-1:]])

    out = []
    for _ in range(count):
        candidate = draw_one()
        for _ in range(20):  # a few redraws; tiny shapes over a tiny range may run out of distinct multisets
            if tuple(np.sort(candidate.reshape(-1))) not in seen:
                break
            candidate = draw_one()
        seen.add(tuple(np.sort(candidate.reshape(-1))))
        out.append(candidate.astype(first.dtype))
    return out
