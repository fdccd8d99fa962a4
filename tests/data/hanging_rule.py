"""A custom_jvp whose JVP rule never returns, next to a correct one: `jaxdiag check --timeout S` must stop the
first after S seconds, report it naming the check that was running, and still check the second.

Not a sample under `samples/`: those are checked without a time limit by the sample-table tests.
"""

import time

import jax
import jax.numpy as jnp

# declared, so that the rule is first called by a check: inferring inputs for a custom_jvp traces its rules too (a
# rung its rules refuse is passed over), and the hang would be met there, before any check
JAXDIAG = {"spins": {"args": ["f32[3]"]}, "fine": {"args": ["f32[3]"]}}


@jax.custom_jvp
def spins(x):
    return jnp.sin(x)


@spins.defjvp
def spins_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    while True:  # the defect: waits for something that never comes
        time.sleep(0.05)
    return spins(x), jnp.cos(x) * t


@jax.custom_jvp
def fine(x):
    return jnp.sin(x)


@fine.defjvp
def fine_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return fine(x), jnp.cos(x) * t
