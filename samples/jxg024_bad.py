"""JXG024 bad: a numerically stable softplus whose bwd uses sigmoid(-x) instead of sigmoid(x). Structure and
shapes are right, so JAX runs it and every gradient is silently wrong: for x > 0 the returned derivative is larger
than the true one, which no clipping or straight-through estimator produces."""

import jax
import jax.numpy as jnp

JAXDIAG = {"softplus": {"args": ["f32[3]"]}, "tanh_c": {"args": ["f32[4]"]}}


@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


def softplus_fwd(x):
    return jnp.logaddexp(x, 0.0), x


def softplus_bwd(x, g):  # jaxdiag-expect: JXG024
    return (g * jax.nn.sigmoid(-x),)


softplus.defvjp(softplus_fwd, softplus_bwd)


@jax.custom_jvp
def tanh_c(x):
    return jnp.tanh(x)


@tanh_c.defjvp
def tanh_c_jvp(primals, tangents):  # jaxdiag-expect: JXG024
    (x,), (t,) = primals, tangents
    y = jnp.tanh(x)
    return y, (y * y - 1.0) * t  # the sign is flipped: d tanh = (1 - y^2) dx
