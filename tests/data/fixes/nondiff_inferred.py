"""A correct custom_vjp with a non-differentiable `scale` (nondiff_argnums) and no declared inputs: `check` cannot
draw a static argument (nothing in its code says what `scale` is: it is only handed to `operator.mul`), and the
configuration it suggests must hold a Python literal for `scale`, not an array."""

import functools
import operator

import jax


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def scaled(x, scale):
    return operator.mul(x, scale)


def scaled_fwd(x, scale):
    return operator.mul(x, scale), None


def scaled_bwd(scale, res, g):
    return (operator.mul(g, scale),)


scaled.defvjp(scaled_fwd, scaled_bwd)
