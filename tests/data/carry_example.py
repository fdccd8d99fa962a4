"""The user's own example for carrypkg (run by tests/test_record.py under `jaxdiag record`): `apply_sin` takes only
arrays, so it can carry `apply_p`'s call whose `fn` param is a function."""

import jax
import jax.numpy as jnp

from carrypkg import filtered, ops


def apply_sin(x):
    return ops.apply(jnp.sin, x)


def soft(x):
    return filtered.softplus(x)


def main():
    x = jnp.array([0.5, -1.0, 2.0])
    print(apply_sin(x), jax.grad(lambda v: apply_sin(v).sum())(x))
    print(ops.round_trip(jnp.bfloat16, x), jax.grad(lambda v: ops.round_trip(jnp.bfloat16, v).sum())(x))
    print(soft(x), jax.grad(lambda v: soft(v).sum())(x))
