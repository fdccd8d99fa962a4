"""JXG024 good: the derivative of softplus is sigmoid(x); the derivative of tanh is 1 - tanh(x)^2."""

import jax
import jax.numpy as jnp

JAXDIAG = {"softplus": {"args": ["f32[3]"]}, "tanh_c": {"args": ["f32[4]"]}}


@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


def softplus_fwd(x):
    return jnp.logaddexp(x, 0.0), x


def softplus_bwd(x, g):
    return (g * jax.nn.sigmoid(x),)


softplus.defvjp(softplus_fwd, softplus_bwd)


@jax.custom_jvp
def tanh_c(x):
    return jnp.tanh(x)


@tanh_c.defjvp
def tanh_c_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = jnp.tanh(x)
    return y, (1.0 - y * y) * t
