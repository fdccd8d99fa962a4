"""JXG011 bad: f returns (sin x, cos x) but bwd only uses the cotangent of the first output, so jax.grad through
cos_x is silently 0 (-0.416 instead of -1.325 for the sum of both outputs at x=2)."""

import jax
import jax.numpy as jnp

JAXDIAG = {"sincos": {"args": ["f32[3]"]}}


@jax.custom_vjp
def sincos(x):
    sin_x = jnp.sin(x)
    cos_x = jnp.cos(x)
    return sin_x, cos_x


def sincos_fwd(x):
    return (jnp.sin(x), jnp.cos(x)), x


def sincos_bwd(x, cts):  # jaxdiag-expect: JXG011
    ct_sin, _ = cts
    return (ct_sin * jnp.cos(x),)


sincos.defvjp(sincos_fwd, sincos_bwd)
