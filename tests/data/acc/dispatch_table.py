"""A public function that dispatches through a module table of backends, selected by a parameter
(`_BACKENDS[backend](x)`), each backend calling a host kernel through `jax.pure_callback`. Tracing `normalise` on
its default reaches the first backend only; the others are reached with `backend=` each key of the table. The
second backend's kernel is not batch-aware although it declares `vmap_method="expand_dims"`: it normalises the
whole batch as one vector. Before, its call site was never checked (JXN012)."""

import enum

import jax
import jax.numpy as jnp
import numpy as np


class Backend(enum.Enum):
    ROWS = "rows"
    WHOLE = "whole"


def _per_row(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(x.dtype)


def _whole(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x)).astype(x.dtype)  # one norm over every axis, the batch's too


def _rows(x):
    return jax.pure_callback(_per_row, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="expand_dims")


def _flat(x):
    return jax.pure_callback(_whole, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="expand_dims")


_BACKENDS = {Backend.ROWS: _rows, Backend.WHOLE: _flat}


def normalise(x: jnp.ndarray, backend: Backend = Backend.ROWS) -> jnp.ndarray:
    """`x` divided by its norm, by the chosen backend."""
    return _BACKENDS[backend](x)
