"""JXG026 good: bwd returns the cotangent in the primal's own dtype, so f64 inputs under x64
get a float64 gradient and f32 inputs a float32 one."""

import jax
import jax.numpy as jnp

JAXDIAG = {"softplus": {"args": ["f64[3]"]}}


@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


def softplus_fwd(x):
    return jnp.logaddexp(x, 0.0), x


def softplus_bwd(x, g):
    return ((g * jax.nn.sigmoid(x)).astype(x.dtype),)


softplus.defvjp(softplus_fwd, softplus_bwd)
