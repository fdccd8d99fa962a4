"""The package's own rule, checked whatever its placeholder does."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return softplus(x), dx * jax.nn.sigmoid(x)
