"""JXG013 bad: bwd returns the two gradients in the wrong order, so jax.grad(weighted_sq, argnums=0) silently
returns the gradient with respect to w."""

import jax
import jax.numpy as jnp

JAXDIAG = {"weighted_sq": {"args": ["f32[3]", "f32[3]"]}}


@jax.custom_vjp
def weighted_sq(x, w):
    return w * x * x


def weighted_sq_fwd(x, w):
    return w * x * x, (x, w)


def weighted_sq_bwd(res, g):  # jaxdiag-expect: JXG013
    x, w = res
    dx = 2.0 * g * w * x
    dw = g * x * x
    return (dw, dx)


weighted_sq.defvjp(weighted_sq_fwd, weighted_sq_bwd)
