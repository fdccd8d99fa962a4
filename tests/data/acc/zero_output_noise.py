"""A function that is exactly zero where it is used, with a JVP whose zero comes out of a cancellation: the tangent
is rounding noise of the size of the input's terms, not of the zero output. Noise is neither additive nor
homogeneous, and judging it against a zero output's rounding (none) called the rule nonlinear."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def unrotated_part(x):
    """The part of `x` a rotation by `x` leaves unchanged: zero for real inputs."""
    return jnp.zeros_like(x)


@unrotated_part.defjvp
def _unrotated_part_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    c, s = jnp.cos(3.0 * x), jnp.sin(3.0 * x)
    return unrotated_part(x), (c * c * t + s * s * t) - t
