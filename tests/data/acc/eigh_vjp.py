"""A custom_vjp of `jnp.linalg.eigh` whose bwd is the textbook formula for symmetric inputs: it returns an
unsymmetrised gradient, which agrees with autodiff of eigh along symmetric directions only. Nothing documents that
A is symmetric; handing A straight to eigh says it (eigh of a general matrix reads one triangle)."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def eigh_pair(A):
    e, v = jnp.linalg.eigh(A)
    return e, v


def _eigh_fwd(A):
    e, v = jnp.linalg.eigh(A)
    return (e, v), (e, v)


def _eigh_bwd(res, cts):
    e, v = res
    de, dv = cts
    eye = jnp.eye(e.shape[-1], dtype=e.dtype)
    f = 1.0 / (e[None, :] - e[:, None] + eye) - eye
    return (v @ (jnp.diag(de) + f * (v.T @ dv)) @ v.T,)


eigh_pair.defvjp(_eigh_fwd, _eigh_bwd)
