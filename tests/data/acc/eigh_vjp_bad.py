"""eigh_vjp.py with the eigenvector term's sign flipped."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def eigh_pair(A):
    e, v = jnp.linalg.eigh(A)
    return e, v


def _eigh_fwd(A):
    e, v = jnp.linalg.eigh(A)
    return (e, v), (e, v)


def _eigh_bwd(res, cts):  # jaxdiag-expect: JXG024
    e, v = res
    de, dv = cts
    eye = jnp.eye(e.shape[-1], dtype=e.dtype)
    f = 1.0 / (e[None, :] - e[:, None] + eye) - eye
    return (v @ (jnp.diag(de) - f * (v.T @ dv)) @ v.T,)


eigh_pair.defvjp(_eigh_fwd, _eigh_bwd)
