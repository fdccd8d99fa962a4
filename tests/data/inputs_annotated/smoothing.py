"""`gamma: float`: a smoothing scalar. The bwd's gamma cotangent is a sum over x, a scalar as the annotation says;
drawn as an f32[3] array, gamma gets a cotangent of the wrong shape, a failure outside the rule's contract."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def soft_minimum(x, gamma: float):
    return -gamma * jax.nn.logsumexp(-x / gamma)


def _fwd(x, gamma):
    lse = jax.nn.logsumexp(-x / gamma)
    return -gamma * lse, (x, gamma, lse)


def _bwd(res, g):
    x, gamma, lse = res
    p = jax.nn.softmax(-x / gamma)
    return g * p, g * (-lse - jnp.sum(p * x) / gamma)


soft_minimum.defvjp(_fwd, _bwd)
