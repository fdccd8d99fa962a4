"""A custom_vjp over per-point arrays and one scalar (a spreading rate), as image-spreading kernels take them: its
primal broadcasts, so it runs with the scalar drawn as an array like the others, but its bwd returns that
argument's cotangent as a scalar, and JAX rejects the structure. The bwd says what the operand is: inference draws
it as a scalar."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def spread(points, weights, rate):
    return jnp.sum(weights * jnp.exp(-rate * points**2))


def _fwd(points, weights, rate):
    return jnp.sum(weights * jnp.exp(-rate * points**2)), (points, weights, rate)


def _bwd(res, g):
    points, weights, rate = res
    e = jnp.exp(-rate * points**2)
    return g * weights * e * (-2 * rate * points), g * e, -g * jnp.sum(weights * e * points**2)


spread.defvjp(_fwd, _bwd)
