"""Sparse cross-entropy as fused-loss kernels write it: the integer targets reach `take_along_axis` only through a
clipped local (`safe = jnp.clip(targets, 0, vocab - 1)`, then `safe[..., None]`), and the ignored label is a static
named as an index, unannotated and without a default, which its callers pass as a variable. `cross_entropy_wrong`'s
backward pass forgets the softmax's normaliser."""

from functools import partial

import jax
import jax.numpy as jnp


def _loss(logits, targets, weights):
    vocab = logits.shape[-1]
    safe = jnp.clip(targets, 0, vocab - 1)
    lse = jax.nn.logsumexp(logits, axis=-1)
    picked = jnp.take_along_axis(logits, safe[..., None], axis=-1)[..., 0]
    return (lse - picked) * weights


def _make(forget_normaliser: bool):
    @partial(jax.custom_vjp, nondiff_argnums=(3,))
    def cross_entropy(logits, targets, weights, ignore_index):
        del ignore_index
        return _loss(logits, targets, weights)

    def fwd(logits, targets, weights, ignore_index):
        return _loss(logits, targets, weights), (logits, targets, weights)

    def bwd(ignore_index, residuals, g):
        logits, targets, weights = residuals
        probs = jnp.exp(logits) if forget_normaliser else jax.nn.softmax(logits, axis=-1)
        onehot = jax.nn.one_hot(jnp.clip(targets, 0, logits.shape[-1] - 1), logits.shape[-1], dtype=logits.dtype)
        dweights = g * _loss(logits, targets, jnp.ones_like(weights))
        return (probs - onehot) * (weights * g)[..., None], None, dweights

    cross_entropy.defvjp(fwd, bwd)
    return cross_entropy


cross_entropy = _make(forget_normaliser=False)
cross_entropy_wrong = _make(forget_normaliser=True)


def mean_loss(logits, targets, ignore_index):
    weights = (targets != ignore_index).astype(logits.dtype)
    return cross_entropy(logits, targets, weights, ignore_index).mean()
