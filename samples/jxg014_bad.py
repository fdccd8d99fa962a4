"""JXG014 bad: a numerically stable softplus whose bwd uses sigmoid(-x) instead of sigmoid(x). Structure and
shapes are right, so JAX runs it and every gradient is silently wrong. (A deliberate surrogate gradient would
suppress JXG014 with `# jaxdiag: ignore[JXG014]` on the bwd's def line.)"""

import jax
import jax.numpy as jnp

JAXDIAG = {"softplus": {"args": ["f32[3]"]}}


@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


def softplus_fwd(x):
    return jnp.logaddexp(x, 0.0), x


def softplus_bwd(x, g):  # jaxdiag-expect: JXG014
    return (g * jax.nn.sigmoid(-x),)


softplus.defvjp(softplus_fwd, softplus_bwd)
