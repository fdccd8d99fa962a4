"""The fix of where_trap_bad.py (the double-where pattern): each case of the select is computed from an input made
safe where that case is not selected, so no case is ever NaN/inf and reverse mode has nothing to multiply by 0.

Plain JAX::

    >>> x = jnp.array([0.0, 1.0, 4.0])
    >>> jax.grad(lambda x: safe_sqrt(x).sum())(x)
    Array([0.  , 0.5 , 0.25], dtype=float32)
    >>> jax.grad(jax.grad(clipped_arcsin))(2.0)
    Array(0., dtype=float32, weak_type=True)
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
    inside = x > 0
    y_safe = safe_sqrt(jnp.where(inside, x, 1.0))
    return safe_sqrt(x), jnp.where(inside, t / (2 * y_safe), 0.0)


@custom_jvp
def clipped_arcsin(x):
    return jnp.arcsin(jnp.clip(x, -1.0, 1.0))


@clipped_arcsin.defjvp
def _clipped_arcsin_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    inside = x * x < 1.0
    x_safe = jnp.where(inside, x, 0.0)
    slope = jnp.where(inside, 1.0 / jnp.sqrt(1.0 - x_safe * x_safe), 0.0)
    return clipped_arcsin(x), slope * t
