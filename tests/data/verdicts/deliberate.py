"""Members of the deliberate-semantics classes other than the samples': a custom_jvp whose tangent is a sigmoid
relaxation of a hard threshold (flat primal), and a custom_jvp that treats its temperature as a constant."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def hard_step(x):
    return (x > 0).astype(x.dtype)


@hard_step.defjvp
def hard_step_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    s = jax.nn.sigmoid(4.0 * x)
    return hard_step(x), 4.0 * s * (1 - s) * t


@jax.custom_jvp
def tempered_softmax(logits, temperature):
    return jax.nn.softmax(logits / temperature)


@tempered_softmax.defjvp
def tempered_softmax_jvp(primals, tangents):
    (logits, temperature), (t, _) = primals, tangents
    y = tempered_softmax(logits, temperature)
    u = t / temperature
    return y, y * (u - jnp.sum(y * u))
