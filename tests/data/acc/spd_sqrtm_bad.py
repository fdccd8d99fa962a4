"""spd_sqrtm.py with the product of the roots where the Sylvester solution has their sum."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def sqrtm(a):
    w, v = jnp.linalg.eigh(a)
    return (v * jnp.sqrt(w)) @ v.T


@sqrtm.defjvp
def _sqrtm_jvp(primals, tangents):  # jaxdiag-expect: JXG024
    (a,), (da,) = primals, tangents
    w, v = jnp.linalg.eigh(a)
    root = jnp.sqrt(w)
    # X dX + dX X = dA, solved in the eigenbasis of X
    inner = (v.T @ da @ v) / (root[:, None] * root[None, :])
    return (v * root) @ v.T, v @ inner @ v.T
