"""A custom_vjp with a non-differentiable `scale` (nondiff_argnums): its bwd returns a cotangent entry for `scale`
too, so JAX rejects the structure (bwd must return one entry per differentiable argument)."""

import functools

import jax

JAXDIAG = {"scaled": {"args": ["f32[3]", "2.0"]}}


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def scaled(x, scale):
    return x * scale


def scaled_fwd(x, scale):
    return x * scale, None


def scaled_bwd(scale, res, g):  # jaxdiag-expect: JXG010
    return (g * scale, None)


scaled.defvjp(scaled_fwd, scaled_bwd)
