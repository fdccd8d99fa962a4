"""A correct custom_jvp and a correct custom_vjp: subjects for counting what a check imports."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return softplus(x), dx * jax.nn.sigmoid(x)


@jax.custom_vjp
def scaled(x, y):
    return x * y, jnp.sin(x)


def _scaled_fwd(x, y):
    return scaled(x, y), (x, y)


def _scaled_bwd(res, cts):
    x, y = res
    ct_prod, ct_sin = cts
    return ct_prod * y + ct_sin * jnp.cos(x), ct_prod * x


scaled.defvjp(_scaled_fwd, _scaled_bwd)
