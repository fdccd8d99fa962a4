"""JXG012 bad: fwd returns the residual cos(x) as the primal output instead of sin(x). JAX never compares fwd's
primal with f, so value_and_grad silently returns -0.416 where f(2.0) is 0.909."""

import jax
import jax.numpy as jnp

JAXDIAG = {"my_sin": {"args": ["f32[3]"]}}


@jax.custom_vjp
def my_sin(x):
    return jnp.sin(x)


def my_sin_fwd(x):  # jaxdiag-expect: JXG012
    s, c = jnp.sin(x), jnp.cos(x)
    return c, (c,)


def my_sin_bwd(res, g):
    (c,) = res
    return (g * c,)


my_sin.defvjp(my_sin_fwd, my_sin_bwd)
