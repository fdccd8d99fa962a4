"""The fix of jxg027_bad.py: the blocked bwd covers the tail block too, so every gradient entry is written."""

import jax
import jax.numpy as jnp

JAXDIAG = {"scale": {"args": ["f32[6]"]}}
BLOCK = 4


@jax.custom_vjp
def scale(x):
    return 2.0 * x


def scale_fwd(x):
    return 2.0 * x, None


def scale_bwd(_, g):
    out = jnp.full(g.shape, jnp.nan, g.dtype)
    for start in range(0, g.shape[0], BLOCK):  # the last block may be partial
        out = out.at[start:start + BLOCK].set(2.0 * g[start:start + BLOCK])
    return (out,)


scale.defvjp(scale_fwd, scale_bwd)
