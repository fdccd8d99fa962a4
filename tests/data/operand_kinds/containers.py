"""Operands annotated as containers of arrays: a fixed tuple (string annotations, as `from __future__ import
annotations` leaves them) and a NamedTuple state. Neither runs on one array per operand: `lo, hi = bounds` unpacks
three values from an f32[3], and an array has no `.mean`. Both rules are correct."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import Array


@jax.custom_jvp
def soft_clip(x: Array, bounds: tuple[Array, Array]) -> Array:
    lo, hi = bounds
    return lo + (hi - lo) * jax.nn.sigmoid(x)


@soft_clip.defjvp
def _soft_clip_jvp(primals, tangents):
    (x, (lo, hi)), (dx, (dlo, dhi)) = primals, tangents
    s = jax.nn.sigmoid(x)
    return soft_clip(x, (lo, hi)), dlo * (1 - s) + dhi * s + (hi - lo) * s * (1 - s) * dx


class Moments(NamedTuple):
    mean: Array
    scale: Array


@jax.custom_vjp
def standardize(x: Array, state: Moments) -> Array:
    return (x - state.mean) * jnp.exp(-state.scale)


def _standardize_fwd(x, state):
    return standardize(x, state), (x, state)


def _standardize_bwd(res, g):
    x, state = res
    inv = jnp.exp(-state.scale)
    return g * inv, Moments(mean=-g * inv, scale=-g * (x - state.mean) * inv)


standardize.defvjp(_standardize_fwd, _standardize_bwd)


@jax.custom_jvp
def soft_clip_wrong(x: Array, bounds: tuple[Array, Array]) -> Array:
    lo, hi = bounds
    return lo + (hi - lo) * jax.nn.sigmoid(x)


@soft_clip_wrong.defjvp
def _soft_clip_wrong_jvp(primals, tangents):  # the lower bound's tangent enters with s, not 1 - s
    (x, (lo, hi)), (dx, (dlo, dhi)) = primals, tangents
    s = jax.nn.sigmoid(x)
    return soft_clip_wrong(x, (lo, hi)), dlo * s + dhi * s + (hi - lo) * s * (1 - s) * dx
