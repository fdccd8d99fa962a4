"""The vmap harness of the custom_vmap and ffi checks: which vmaps to run (in_axes, batch size, nesting), the
arrays to hand them, and the per-example loop every run is compared with.

The batching checks use the richer variants of `_batching/_reference.py` (jit placement, out_axes, constants).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np




@dataclass(frozen=True)
class Variant:
    """One way of calling vmap: `in_axes` per argument, the batch size, and an outer vmap when `outer > 0`."""

    in_axes: tuple[int | None, ...]
    batch: int
    outer: int = 0

    @property
    def in_batched(self) -> list[bool]:
        return [a is not None for a in self.in_axes]

    def describe(self, fn: str = "f") -> str:
        axes = self.in_axes[0] if len(self.in_axes) == 1 else self.in_axes
        text = f"vmap({fn}, in_axes={axes!r}) over a batch of {self.batch}"
        return f"{text}, nested inside an outer vmap of {self.outer}" if self.outer else text


def _unbatched_subsets(n: int) -> list[tuple[int, ...]]:
    """Which arguments to leave unbatched: every proper subset for up to 3 arguments, else singles and pairs."""
    if n <= 3:
        return [s for k in range(1, n) for s in itertools.combinations(range(n), k)]
    return [s for k in (1, 2) for s in itertools.combinations(range(n), k)]


def variants(n_args: int, batch: int, outer: int, user_axes: Any = None, batch_one: bool = True) -> list[Variant]:
    """All 0, all -1, each unbatched subset, batch size 1, nested; the user's --in-axes first when given."""
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
    out.append(Variant((0,) * n_args, batch, outer=outer))
    return list(dict.fromkeys(out))


def lead(variant: Variant) -> tuple[int, ...]:
    return (variant.outer, variant.batch) if variant.outer else (variant.batch,)


def vmap_args(stacked: list[np.ndarray], variant: Variant) -> list[np.ndarray]:
    """The arrays handed to vmap: batched args with the batch axis at `in_axes`, unbatched ones as one example."""
    args = []
    for x, axis in zip(stacked, variant.in_axes):
        if axis is None:
            args.append(x[(0,) * len(lead(variant))])
        elif variant.outer:
            args.append(x)  # nested variants are all in_axes=0, for both vmaps
        else:
            args.append(np.moveaxis(x, 0, axis))
    return args


def loop_reference(call: Callable, stacked: list[np.ndarray], variant: Variant) -> list[np.ndarray]:
    """The per-example reference: call the function on each example and stack the output leaves."""
    per_index = []
    for index in np.ndindex(*lead(variant)):
        args = [x[index] if axis is not None else x[(0,) * len(index)] for x, axis in zip(stacked, variant.in_axes)]
        per_index.append([np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(call(*args))])
    return [np.stack(leaves).reshape(lead(variant) + leaves[0].shape) for leaves in zip(*per_index)]


def vmapped(fn: Callable, variant: Variant) -> Callable:
    inner = jax.vmap(fn, in_axes=variant.in_axes)
    return jax.vmap(inner, in_axes=variant.in_axes) if variant.outer else inner


def first_line(exc: BaseException) -> str:
    """`Type: first line of the message` without a trailing period, for embedding in a sentence."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0].rstrip('.')}" if text else type(exc).__name__
