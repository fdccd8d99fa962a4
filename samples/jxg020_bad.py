"""JXG020 bad: the tangent of |x| written as abs(t) instead of sign(x) * t. jax.jvp runs, but the tangent map is
not linear, so jax.grad fails with "Transpose rule ... for 'abs' not implemented"."""

import jax
import jax.numpy as jnp

JAXDIAG = {"safe_abs": {"args": ["f32[3]"]}}


@jax.custom_jvp
def safe_abs(x):
    return jnp.abs(x)


@safe_abs.defjvp
def safe_abs_jvp(primals, tangents):  # jaxdiag-expect: JXG020
    (x,), (t,) = primals, tangents
    return jnp.abs(x), jnp.abs(t)
