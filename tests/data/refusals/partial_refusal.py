"""JVP rules that refuse the tangent of one argument on purpose (a helper of the package raising
NotImplementedError when that tangent is non-zero, as interpolation and fitting libraries do for their sample
points) and handle the other: checked with the refused argument held constant. `weighted_sum_wrong` forgets a factor
in the tangent it does support; `frozen` refuses every argument (JXG025 stands)."""

import jax
import jax.numpy as jnp
import numpy as np


def _refuse_points(points_dot):
    if np.any(np.asarray(points_dot)):
        raise NotImplementedError("differentiating with respect to the sample points is not supported")


@jax.custom_jvp
def weighted_sum(points, values):
    return jnp.sum(jnp.cos(points) * values)


@weighted_sum.defjvp
def _weighted_sum_jvp(primals, tangents):
    points, values = primals
    points_dot, values_dot = tangents
    _refuse_points(points_dot)
    return weighted_sum(points, values), jnp.sum(jnp.cos(points) * values_dot)


@jax.custom_jvp
def weighted_sum_wrong(points, values):
    return jnp.sum(jnp.cos(points) * values)


@weighted_sum_wrong.defjvp
def _weighted_sum_wrong_jvp(primals, tangents):
    points, values = primals
    points_dot, values_dot = tangents
    _refuse_points(points_dot)
    return weighted_sum_wrong(points, values), 2.0 * jnp.sum(jnp.cos(points) * values_dot)  # the 2 is wrong


@jax.custom_jvp
def frozen(points, values):
    return points * values


@frozen.defjvp
def _frozen_jvp(primals, tangents):
    raise NotImplementedError("frozen is not differentiable")
