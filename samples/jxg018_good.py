"""JXG018 good: bwd returns the cotangent of both the weights and the vector."""

import jax
import jax.numpy as jnp

JAXDIAG = {"matvec": {"args": ["f32[2,3]", "f32[3]"]}}


@jax.custom_vjp
def matvec(w, v):
    return w @ v


def matvec_fwd(w, v):
    return w @ v, (w, v)


def matvec_bwd(res, g):
    w, v = res
    return (jnp.outer(g, v), w.T @ g)


matvec.defvjp(matvec_fwd, matvec_bwd)
