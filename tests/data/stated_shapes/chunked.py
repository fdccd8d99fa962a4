"""Attention as published flash-attention code writes it: the public custom_vjp forwards its arguments to a private
function, whose one statement of their shapes mixes a starred shape with other items (`batch, heads, n, dim, v_dim
= *q.shape, v.shape[-1]`). Keys and values are shaped like the queries, the mask covers the batch and the key axis,
and no docstring says so. `chunked_attention_unmasked` has a backward pass that forgets the mask: only inputs of
these shapes show it. Before, none was checked (JXN004: every rung of the plain ladder fails to unpack)."""

import jax
import jax.numpy as jnp


def _attention(q, k, v, mask):
    batch, heads, n, dim, v_dim = *q.shape, v.shape[-1]
    scores = jnp.einsum("bhqd,bhkd->bhqk", q, k) / jnp.sqrt(dim)
    scores = jnp.where(mask[:, None, None, :] > 0, scores, -1e9)
    return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(scores, axis=-1), v).reshape(batch, heads, n, v_dim)


def _unmasked(q, k, v, mask):
    return _attention(q, k, v, jnp.ones_like(mask))


@jax.custom_vjp
def chunked_attention(q, k, v, mask):
    return _attention(q, k, v, mask)


def _fwd(q, k, v, mask):
    return _attention(q, k, v, mask), (q, k, v, mask)


def _bwd(residual, g):
    q, k, v, mask = residual
    _, pullback = jax.vjp(lambda q, k, v: _attention(q, k, v, mask), q, k, v)
    return (*pullback(g), jnp.zeros_like(mask))


chunked_attention.defvjp(_fwd, _bwd)


@jax.custom_vjp
def chunked_attention_unmasked(q, k, v, mask):
    return _attention(q, k, v, mask)


def _bwd_unmasked(residual, g):
    q, k, v, mask = residual
    _, pullback = jax.vjp(lambda q, k, v: _unmasked(q, k, v, mask), q, k, v)  # JXG024: the mask is forgotten
    return (*pullback(g), jnp.zeros_like(mask))


chunked_attention_unmasked.defvjp(_fwd, _bwd_unmasked)
