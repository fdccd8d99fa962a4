"""Grouped-query attention written the way kernel libraries annotate it, in jaxtyping's notation (quoted: jaxtyping
need not be installed, `from __future__ import annotations` keeps the annotations as text). Nothing unpacks a shape
and no docstring gives one: only the annotations say the operands are rank 4 with shared axes. The second operand
is called `key` but annotated a float array, never a PRNG key. The query heads must be a multiple of the key-value
heads, which the annotations do not say. The public wrapper resolves `scale=None` before it calls the kernel, whose
`scale: float` takes no None. `gqa_attention_wrong`'s backward pass forgets the scale on the query's gradient."""

# ruff: noqa: F722, F821  (jaxtyping's notation, never evaluated here)
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp


def _expand(kv: jax.Array, groups: int) -> jax.Array:
    return jnp.repeat(kv, groups, axis=2)


def _attend(query, key, value, scale):
    if query.shape[2] % key.shape[2]:
        raise ValueError(f"query heads ({query.shape[2]}) must be a multiple of key-value heads ({key.shape[2]})")
    groups = query.shape[2] // key.shape[2]
    k, v = _expand(key, groups), _expand(value, groups)
    weights = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", query, k) * scale, axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", weights, v)


def _make(forget_scale: bool):
    @partial(jax.custom_vjp, nondiff_argnums=(3,))
    def kernel(
        query: "Float[Array, 'batch seq q_heads dim']",
        key: Float[Array, "batch seq kv_heads dim"],
        value: Float[Array, "batch seq kv_heads dim"] | None,
        scale: float,
    ) -> Float[Array, "batch seq q_heads dim"]:
        return _attend(query, key, value, scale)

    def fwd(query, key, value, scale):
        return _attend(query, key, value, scale), (query, key, value)

    def bwd(scale, residuals, g):
        _, pullback = jax.vjp(lambda q, k, v: _attend(q, k, v, scale), *residuals)
        dq, dk, dv = pullback(g)
        return (dq / scale if forget_scale else dq), dk, dv

    kernel.defvjp(fwd, bwd)
    return kernel


gqa_attention_core = _make(forget_scale=False)
gqa_attention_wrong = _make(forget_scale=True)


def gqa_attention(query, key, value, scale: float | None = None):
    if scale is None:
        scale = query.shape[-1] ** -0.5
    return gqa_attention_core(query, key, value, scale)
