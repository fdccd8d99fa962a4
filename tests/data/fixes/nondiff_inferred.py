"""A correct custom_vjp with a non-differentiable `scale` (nondiff_argnums) and no declared inputs: `check` cannot
draw a static argument, and the configuration it suggests must hold a Python literal for `scale`, not an array."""

import functools

import jax


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def scaled(x, scale):
    return x * scale


def scaled_fwd(x, scale):
    return x * scale, None


def scaled_bwd(scale, res, g):
    return (g * scale,)


scaled.defvjp(scaled_fwd, scaled_bwd)
