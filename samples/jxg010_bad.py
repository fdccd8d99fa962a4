"""JXG010 bad: bwd returns a bare array for the single argument. custom_vjp needs a tuple with one cotangent per
positional argument, so jax.grad fails with a pytree-structure error."""

import jax
import jax.numpy as jnp

JAXDIAG = {"smooth_abs": {"args": ["f32[3]"]}}


@jax.custom_vjp
def smooth_abs(x):
    return jnp.sqrt(x * x + 1e-3)


def smooth_abs_fwd(x):
    y = jnp.sqrt(x * x + 1e-3)
    return y, (x, y)


def smooth_abs_bwd(res, g):  # jaxdiag-expect: JXG010
    x, y = res
    return g * x / y


smooth_abs.defvjp(smooth_abs_fwd, smooth_abs_bwd)
