"""JXG037 bad: a softmax that also returns its log-normaliser for a later pass, whose JVP rule gives the
log-normaliser a zero tangent. Whether anyone differentiates it (then its gradient is silently zero) or it is only
a residual (then this is intended) is not said in the function.

Plain JAX, with `x = jnp.array([0.5, -1.0, 2.0, 0.1])`: `jax.grad(lambda v: softmax_lse(v)[1])(x)` is
`[0, 0, 0, 0]`, but the same with `softmax_lse.fun` (autodiff of the undecorated function) is the softmax,
`[0.16, 0.04, 0.70, 0.11]`."""

import jax
import jax.numpy as jnp

JAXDIAG = {"softmax_lse": {"args": ["f32[4]"]}}


@jax.custom_jvp
def softmax_lse(x):
    lse = jax.nn.logsumexp(x)
    return jnp.exp(x - lse), lse


@softmax_lse.defjvp
def softmax_lse_jvp(primals, tangents):  # jaxdiag-expect: JXG037
    (x,), (tx,) = primals, tangents
    probs, lse = softmax_lse(x)
    return (probs, lse), (probs * (tx - jnp.sum(probs * tx)), jnp.zeros_like(lse))
