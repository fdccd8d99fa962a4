"""A correct rule beside the module that crashes: with --keep-going it is checked all the same."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), jax.nn.sigmoid(x) * t
