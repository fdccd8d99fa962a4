"""Custom JVPs of a softmax taking a `normalize: bool` static with no default (nondiff_argnums), and callers that
pass it a variable, never a literal. The flag's annotation declares its values: each is in the contract.
`softmax_forgets_denominator`'s rule is wrong only with the flag set (it differentiates the unnormalised branch)."""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def softmax(x, normalize: bool):
    e = jnp.exp(x - jnp.max(x))
    return e / jnp.sum(e) if normalize else e


@softmax.defjvp
def _softmax_jvp(normalize, primals, tangents):
    (x,), (t,) = primals, tangents
    y = softmax(x, normalize)
    if normalize:
        return y, y * (t - jnp.sum(y * t))
    return y, y * (t - t[jnp.argmax(x)])


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def softmax_forgets_denominator(x, normalize: bool):
    e = jnp.exp(x - jnp.max(x))
    return e / jnp.sum(e) if normalize else e


@softmax_forgets_denominator.defjvp
def _softmax_forgets_denominator_jvp(normalize, primals, tangents):
    (x,), (t,) = primals, tangents
    return softmax_forgets_denominator(x, normalize), softmax_forgets_denominator(x, normalize) * t


def attention_weights(logits, normalize_output):
    return softmax(logits, normalize_output), softmax_forgets_denominator(logits, normalize_output)
