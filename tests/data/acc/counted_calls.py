"""Solvers that report how often they were called beside their result (an info output that is not a function of
the inputs, as a wall-clock time is): the primal run twice on the same values disagrees with itself there, so fwd's
value for it is no mismatch. `counted_square`'s fwd is right; `counted_shifted`'s fwd returns a shifted primal."""

import itertools

import jax
import jax.numpy as jnp

_calls = itertools.count()


@jax.custom_vjp
def counted_square(x):
    return x * x, jnp.asarray(next(_calls), jnp.int32)


def _square_fwd(x):
    return (x * x, jnp.asarray(next(_calls), jnp.int32)), x


def _square_bwd(x, g):
    return (2.0 * x * g[0],)


counted_square.defvjp(_square_fwd, _square_bwd)


@jax.custom_vjp
def counted_shifted(x):
    return x * x, jnp.asarray(next(_calls), jnp.int32)


def _shifted_fwd(x):
    return (x * x + 0.5, jnp.asarray(next(_calls), jnp.int32)), x


counted_shifted.defvjp(_shifted_fwd, _square_bwd)
