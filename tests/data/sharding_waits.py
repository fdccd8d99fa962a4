"""Targets for the sharding child's time limit (tests/test_sharding.py): `waits` never returns once traced (a
collective that deadlocks looks the same from outside), `fine` is correct. `jaxdiag sharding --timeout S` must stop
the first after S seconds with the JXU004 result, not hang and not blame the user's code.

Not a sample under `samples/`: those are checked without a short time limit.
"""

import time

import jax.numpy as jnp


def waits(x):
    while True:  # waits for something that never comes
        time.sleep(0.05)
    return x


def fine(x):
    return jnp.sin(x)
