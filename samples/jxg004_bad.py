"""JXG004 bad: bwd returns the cotangent in float16 "to save memory". JAX does not check cotangent dtypes, so
jax.grad of a float32 input silently comes back float16."""

import jax
import jax.numpy as jnp

JAXDIAG = {"fast_tanh": {"args": ["f32[3]"]}}


@jax.custom_vjp
def fast_tanh(x):
    return jnp.tanh(x)


def fast_tanh_fwd(x):
    y = jnp.tanh(x)
    return y, y


def fast_tanh_bwd(y, g):  # jaxdiag-expect: JXG004
    return ((g * (1.0 - y * y)).astype(jnp.float16),)


fast_tanh.defvjp(fast_tanh_fwd, fast_tanh_bwd)
