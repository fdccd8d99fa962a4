"""JXG028 (a note): the custom_vjp exists because autodiff of its primal is NaN. `jnp.where(x > 0, sqrt(x), 0)`
differentiates both branches, and the derivative of `sqrt` at a negative x is NaN, which the where's zero cotangent
does not cancel (`0 * nan = nan`). The bwd is right; jaxdiag says which entries it could compare with finite
differences only.

Plain JAX::

    >>> x = jnp.array([4.0, -1.0])
    >>> jax.grad(lambda x: jnp.sum(jnp.where(x > 0, jnp.sqrt(x), 0.0)))(x)
    Array([0.25,  nan], dtype=float32)
    >>> jax.grad(lambda x: jnp.sum(relu_sqrt(x)))(x)
    Array([0.25, 0.  ], dtype=float32)
"""

import jax
import jax.numpy as jnp

JAXDIAG = {"relu_sqrt": {"args": ["f32[8]"]}}


@jax.custom_vjp
def relu_sqrt(x):
    return jnp.where(x > 0, jnp.sqrt(x), 0.0)


def relu_sqrt_fwd(x):
    y = jnp.where(x > 0, jnp.sqrt(jnp.abs(x)), 0.0)
    return y, y


def relu_sqrt_bwd(y, g):
    return (jnp.where(y > 0, g / (2.0 * jnp.where(y > 0, y, 1.0)), 0.0),)


relu_sqrt.defvjp(relu_sqrt_fwd, relu_sqrt_bwd)
