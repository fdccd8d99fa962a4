"""JXG019 bad (with --order 2): bwd wraps the residual in stop_gradient "to save memory". First-order gradients
are right, but jax.hessian differentiates bwd's code and silently gets 0 instead of 2 * x."""

import jax
import jax.numpy as jnp

JAXDIAG = {"cube": {"args": ["f32[3]"]}}


@jax.custom_vjp
def cube(x):
    return x * x * x / 3.0


def cube_fwd(x):
    return x * x * x / 3.0, x


def cube_bwd(x, g):  # jaxdiag-expect: JXG019
    x = jax.lax.stop_gradient(x)
    return (g * x * x,)


cube.defvjp(cube_fwd, cube_bwd)
