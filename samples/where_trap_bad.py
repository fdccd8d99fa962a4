"""JVP rules that guard a singular factor with `jnp.where` on the factor itself (the where trap). Forward mode is
right everywhere, but reverse mode differentiates both cases of the select: where the guard picks 0 the other case
is inf or NaN, it gets a zero cotangent, and `0 * inf = NaN`.

Plain JAX::

    >>> x = jnp.array([0.0, 1.0, 4.0])
    >>> jax.jvp(safe_sqrt, (x,), (jnp.ones(3),))[1]
    Array([0.  , 0.5 , 0.25], dtype=float32)
    >>> jax.grad(lambda x: safe_sqrt(x).sum())(x)
    Array([ nan, 0.5 , 0.25], dtype=float32)
    >>> jax.grad(jax.grad(clipped_arcsin))(2.0), jax.jacfwd(jax.grad(clipped_arcsin))(2.0)
    (Array(nan, dtype=float32, weak_type=True), Array(0., dtype=float32, weak_type=True))
"""

import jax.numpy as jnp
from jax import custom_jvp

JAXDIAG = {"safe_sqrt": {"args": ["f32[6]@positive"]}, "clipped_arcsin": {"args": ["f32[6]@-2..2"]}}


@custom_jvp
def safe_sqrt(x):
    return jnp.sqrt(x)


@safe_sqrt.defjvp
def _safe_sqrt_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = safe_sqrt(x)
    return y, jnp.where(x > 0, t / (2 * y), 0.0)  # jaxdiag-expect: JXG027


@custom_jvp
def clipped_arcsin(x):
    return jnp.arcsin(jnp.clip(x, -1.0, 1.0))


@clipped_arcsin.defjvp
def _clipped_arcsin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    slope = jnp.where(x * x < 1.0, 1.0 / jnp.sqrt(1.0 - x * x), 0.0)  # jaxdiag-expect: JXG023
    return clipped_arcsin(x), slope * t
