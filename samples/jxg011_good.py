"""JXG011 good: bwd adds the contribution of every output's cotangent."""

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


def sincos_bwd(x, cts):
    ct_sin, ct_cos = cts
    return (ct_sin * jnp.cos(x) - ct_cos * jnp.sin(x),)


sincos.defvjp(sincos_fwd, sincos_bwd)
