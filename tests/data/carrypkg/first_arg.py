"""A rule whose wrapper's call takes its first argument by name and the rest as `*args`: the function it holds
says what the rest are (a weight vector beside the data, and a repeat count that must be a Python int)."""

import jax.numpy as jnp
from helperlib import filter_vjp_first


def _tiled(x, w, repeats: int):
    return jnp.sum(jnp.tile(w, repeats) * jnp.tanh(jnp.tile(x, repeats)))


def _tiled_fwd(x, w, repeats: int):
    return _tiled(x, w, repeats), (x, w)


def _tiled_bwd(repeats, res, g):
    x, w = res
    return g * repeats * w * (1 - jnp.tanh(x) ** 2), g * repeats * jnp.tanh(x)


tiled = filter_vjp_first(_tiled).def_vjp(_tiled_fwd, _tiled_bwd)
