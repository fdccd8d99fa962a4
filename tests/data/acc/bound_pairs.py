"""Functions of a bound pair (`lo, hi`; `low, high`): the gradient clip of JAX's custom_vjp tutorial, whose bwd
clips the cotangent into [lo, hi] (linear in it only when the interval holds 0, as every caller's does), and the
cdf of a uniform distribution on [low, high], whose JVP is right inside the support and zero outside it (the clip)
or, in the bad twin, forgets the clip outside the support."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


@jax.custom_jvp
def uniform_cdf(x, low, high):
    return jnp.clip((x - low) / (high - low), 0.0, 1.0)


@uniform_cdf.defjvp
def _uniform_cdf_jvp(primals, tangents):
    x, low, high = primals
    x_t, low_t, high_t = tangents
    width = high - low
    inside = (x > low) & (x < high)
    slope = jnp.where(inside, 1.0 / width, 0.0)
    return uniform_cdf(x, low, high), slope * (x_t + low_t * (x - high) / width - high_t * (x - low) / width)


@jax.custom_jvp
def uniform_cdf_unclipped_jvp(x, low, high):
    return jnp.clip((x - low) / (high - low), 0.0, 1.0)


@uniform_cdf_unclipped_jvp.defjvp
def _unclipped_jvp(primals, tangents):
    x, low, high = primals
    x_t, low_t, high_t = tangents
    width = high - low
    tangent = (x_t + low_t * (x - high) / width - high_t * (x - low) / width) / width
    return uniform_cdf_unclipped_jvp(x, low, high), tangent
