"""Custom VJPs of a gated recurrence with an optional gate (`gate=None` when the caller has none), as recurrent
kernels take their optional inputs. `gated_sum`'s bwd always returns a cotangent for the gate, an array even when
the gate is None: JAX ignores an entry for an argument without array leaves, so that is fine. `paired_sum`'s bwd
returns one array for a pair of arrays, which JAX rejects."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def gated_sum(x, gate=None):
    return jnp.cumsum(x if gate is None else x * gate)


def _gated_fwd(x, gate=None):
    return gated_sum(x, gate), gate


def _gated_bwd(gate, g):
    dx = jnp.cumsum(g[::-1])[::-1]
    return (dx if gate is None else dx * gate, jnp.zeros_like(dx))  # an array for the gate, given or not


gated_sum.defvjp(_gated_fwd, _gated_bwd)


def recurrence(x):
    return gated_sum(x)


@jax.custom_vjp
def paired_sum(x, pair):
    return jnp.cumsum(x * pair[0] + pair[1])


def _paired_fwd(x, pair):
    return paired_sum(x, pair), pair


def _paired_bwd(pair, g):
    dx = jnp.cumsum(g[::-1])[::-1]
    return (dx * pair[0], dx * x_free(pair))  # one array where the pair has two


def x_free(pair):
    return pair[0]


paired_sum.defvjp(_paired_fwd, _paired_bwd)


def paired_recurrence(x):
    return paired_sum(x, (x * 0.5, x + 1.0))


@jax.custom_vjp
def misshapen_sum(x, pair):
    return jnp.cumsum(x * pair[0] + pair[1])


def _misshapen_bwd(pair, g):
    dx = jnp.cumsum(g[::-1])[::-1]
    return (dx * pair[0], jnp.sum(dx))  # a scalar where the pair holds two f32[3]: JAX rejects it


misshapen_sum.defvjp(lambda x, pair: (misshapen_sum(x, pair), pair), _misshapen_bwd)


def misshapen_recurrence(x):
    return misshapen_sum(x, (x * 0.5, x + 1.0))
