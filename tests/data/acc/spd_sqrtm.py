"""A matrix square root defined on symmetric positive-definite matrices only (NaN elsewhere: `eigh` reads one
triangle, negative eigenvalues have no real root), with the Sylvester-equation JVP, as optimal-transport and
Gaussian-process libraries write it. Its callers pass covariance matrices."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def sqrtm(a):
    w, v = jnp.linalg.eigh(a)
    return (v * jnp.sqrt(w)) @ v.T


@sqrtm.defjvp
def _sqrtm_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    w, v = jnp.linalg.eigh(a)
    root = jnp.sqrt(w)
    # X dX + dX X = dA, solved in the eigenbasis of X
    inner = (v.T @ da @ v) / (root[:, None] + root[None, :])
    return (v * root) @ v.T, v @ inner @ v.T
