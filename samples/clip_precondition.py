"""A clip with a custom_vjp that is correct whenever `lo <= hi`, the function's implicit precondition. Random
inputs violate it on some draws (lo > hi), where the gradient is not what the bwd returns: jaxdiag re-tries such a
finding on fresh draws and, when only some draws show it, reports it with the inputs that reproduce it and how
often it appeared, instead of a verdict that depends on the seed."""

import jax
import jax.numpy as jnp

JAXDIAG = {"clip": {"args": ["f32[4]", "f32[]", "f32[]"]}}


@jax.custom_vjp
def clip(x, lo, hi):
    return jnp.minimum(jnp.maximum(x, lo), hi)


def clip_fwd(x, lo, hi):
    return clip(x, lo, hi), (x, lo, hi)


def clip_bwd(res, g):  # jaxdiag-expect: JXG014
    x, lo, hi = res
    below, above = x < lo, x > hi
    inside = ~below & ~above
    return g * inside, jnp.sum(g * below), jnp.sum(g * above)


clip.defvjp(clip_fwd, clip_bwd)
