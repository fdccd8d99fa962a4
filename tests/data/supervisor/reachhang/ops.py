"""A package whose callbacks are found only by tracing its public functions (tests/test_supervisor.py): the host
code of `hanging` never returns, so tracing it runs past the time limit; `scaled` comes after it and must still be
checked."""

import time

import jax
import numpy as np


def _forever(x):
    while True:
        time.sleep(0.05)


def hanging(x):
    return jax.pure_callback(_forever, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential")


def _double(x):
    return np.asarray(2 * x, dtype=x.dtype)


def scaled(x):
    return jax.pure_callback(_double, jax.ShapeDtypeStruct(x.shape, x.dtype), x)  # no vmap_method: JXB020
