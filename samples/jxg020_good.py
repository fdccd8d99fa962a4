"""JXG020 good: the tangent is linear in t (a primal-only factor times the tangent)."""

import jax
import jax.numpy as jnp

JAXDIAG = {"safe_abs": {"args": ["f32[3]"]}}


@jax.custom_jvp
def safe_abs(x):
    return jnp.abs(x)


@safe_abs.defjvp
def safe_abs_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.abs(x), jnp.sign(x) * t
