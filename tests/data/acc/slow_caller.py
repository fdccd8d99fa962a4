"""A rule whose only public caller computes for a long time before it calls the rule, the pattern of a waveform
generator that runs thousands of operations eagerly, op by op, under `jax.vmap` and `jax.grad`: the call-site search
gives up on it after its budget and checks the rule on its own, instead of running out the target's time limit."""

import time

import jax
import jax.numpy as jnp


@jax.custom_jvp
def taper(x):
    return jnp.tanh(x)


@taper.defjvp
def _taper_jvp(primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return taper(x), x_dot / jnp.cosh(x) ** 2


def generate(frequencies):
    """The taper of `frequencies` after an hour of eager work."""
    finish = time.monotonic() + 3600.0
    while time.monotonic() < finish:
        time.sleep(0.01)
    return taper(frequencies)
