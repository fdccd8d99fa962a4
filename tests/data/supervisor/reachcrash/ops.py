"""A package whose callbacks are found only by tracing its public functions (tests/test_supervisor.py): the host
code of `crashing` segfaults, so the worker tracing it dies; `scaled` comes after it and `smooth` is a target of
its own, and both must still be checked."""

import ctypes

import jax
import jax.numpy as jnp
import numpy as np


@jax.custom_jvp
def smooth(x):
    return jnp.sin(x)


@smooth.defjvp
def _smooth_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), jnp.cos(x) * t


def _segfault(x):
    ctypes.string_at(0)
    return x


def crashing(x):
    return jax.pure_callback(_segfault, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential")


def _double(x):
    return np.asarray(2 * x, dtype=x.dtype)


def scaled(x):
    return jax.pure_callback(_double, jax.ShapeDtypeStruct(x.shape, x.dtype), x)  # no vmap_method: JXB020
