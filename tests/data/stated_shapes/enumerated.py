"""Custom VJPs taking an Enum-annotated static without a default (`direction: Direction` in nondiff_argnums), whose
callers pass a variable: each member is in its contract. `exponential_wrong`'s backward pass forgets the direction's
rate."""

import enum
from functools import partial

import jax
import jax.numpy as jnp


class Direction(enum.Enum):
    GROW = 2.0
    DECAY = -0.5


def _make(forget_rate: bool):
    @partial(jax.custom_vjp, nondiff_argnums=(1,))
    def exponential(x, direction: Direction):
        return jnp.exp(direction.value * x)

    def fwd(x, direction):
        return jnp.exp(direction.value * x), x

    def bwd(direction, x, g):
        rate = 1.0 if forget_rate else direction.value
        return (g * rate * jnp.exp(direction.value * x),)

    exponential.defvjp(fwd, bwd)
    return exponential


exponential = _make(forget_rate=False)
exponential_wrong = _make(forget_rate=True)


def evolve(x, direction):
    return exponential(x, direction)
