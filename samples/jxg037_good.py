"""JXG037 good: the same softmax, whose JVP rule differentiates the log-normaliser too: its tangent is the
softmax-weighted sum of the input's tangent. (A log-normaliser that is only a residual says so in the function
itself instead: `jax.lax.stop_gradient` on it, so autodiff of the undecorated function agrees with a zero tangent.)"""

import jax
import jax.numpy as jnp

JAXDIAG = {"softmax_lse": {"args": ["f32[4]"]}}


@jax.custom_jvp
def softmax_lse(x):
    lse = jax.nn.logsumexp(x)
    return jnp.exp(x - lse), lse


@softmax_lse.defjvp
def softmax_lse_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    probs, lse = softmax_lse(x)
    lse_dot = jnp.sum(probs * tx)
    return (probs, lse), (probs * (tx - lse_dot), lse_dot)
