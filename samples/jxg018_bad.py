"""JXG018 bad: a matvec whose bwd returns None for the vector, "because only the weights are trained". In a
two-layer net the vector is the previous layer's output, so the first layer gets no gradient at all
(|dW1| = 0.0 instead of 2.4)."""

import jax
import jax.numpy as jnp

JAXDIAG = {"matvec": {"args": ["f32[2,3]", "f32[3]"]}}


@jax.custom_vjp
def matvec(w, v):
    return w @ v


def matvec_fwd(w, v):
    return w @ v, (w, v)


def matvec_bwd(res, g):  # jaxdiag-expect: JXG018
    w, v = res
    return (jnp.outer(g, v), None)


matvec.defvjp(matvec_fwd, matvec_bwd)
