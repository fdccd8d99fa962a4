"""The primal of jxg028_bad.py written with the double-`where` idiom: `sqrt` only ever sees positive
values, so autodiff of the primal is finite everywhere and every entry of the bwd is compared with it."""

import jax
import jax.numpy as jnp

JAXDIAG = {"relu_sqrt": {"args": ["f32[8]"]}}


@jax.custom_vjp
def relu_sqrt(x):
    return jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0)


def relu_sqrt_fwd(x):
    y = jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0)
    return y, y


def relu_sqrt_bwd(y, g):
    return (jnp.where(y > 0, g / (2.0 * jnp.where(y > 0, y, 1.0)), 0.0),)


relu_sqrt.defvjp(relu_sqrt_fwd, relu_sqrt_bwd)
