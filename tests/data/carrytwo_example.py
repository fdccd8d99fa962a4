"""The user's own example for carrytwo: `both` takes only arrays and carries both primitives' calls."""

import jax
import jax.numpy as jnp

from carrytwo import ops


def both(x):
    return ops.shift(jnp.cos, ops.scale(jnp.sin, x))


def smooth(x):
    return ops.outer(jnp.tanh, x)


def main():
    x = jnp.array([0.5, -1.0, 2.0])
    print(both(x), jax.grad(lambda v: both(v).sum())(x))


def main_jvp():
    x = jnp.array([0.5, -1.0, 2.0])
    print(smooth(x), jax.jvp(smooth, (x,), (jnp.ones(3),)))
