"""Callback sites called through module-level aliases of `jax.pure_callback`."""

import functools

import jax
import numpy as np

host_call = functools.partial(jax.pure_callback, vmap_method="sequential")
raw_callback = jax.pure_callback


def host_double(x):
    """Batched by a loop of calls (vmap_method="sequential", from the alias): vmap works."""
    return host_call(lambda v: np.asarray(v) * 2.0, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def host_half(x):
    """No vmap_method: `jax.vmap` of it fails."""
    return raw_callback(lambda v: np.asarray(v) / 2.0, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
