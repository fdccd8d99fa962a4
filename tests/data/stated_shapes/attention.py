"""An attention kernel written as GPU kernels are: rank-4 queries, keys and values sharing their batch and head
axes, a mask over the batch and sequence axes, and a `kernel` static whose default is a fused path that only runs
on an accelerator (a primitive lowered for CUDA only: on a CPU machine it traces but cannot run); `'reference'` is
the plain-JAX path the author tests it against. The kernel's own body unpacks
the queries' shape; the public wrapper documents the other arguments. `attention_wrong_bwd` has a backward pass
that forgets the mask: only inputs of these shapes and the reference path show it."""

from functools import partial
from typing import Literal

import jax
import jax.numpy as jnp
from jax._src import dispatch
from jax.extend.core import Primitive
from jax.interpreters import mlir

fused_attention_p = Primitive("stated_fused_attention")


def _fused_abstract(q, k, v, mask):
    batch, seq, heads, dim = q.shape
    return jax.core.ShapedArray((batch, seq, heads, dim), q.dtype)


fused_attention_p.def_impl(partial(dispatch.apply_primitive, fused_attention_p))  # as GPU kernels' impls are
fused_attention_p.def_abstract_eval(_fused_abstract)
mlir.register_lowering(fused_attention_p, lambda ctx, q, k, v, mask: [q], platform="cuda")


def _attention(q, k, v, mask, kernel: Literal["fused", "reference"] = "fused"):
    batch, seq, heads, dim = q.shape
    if kernel == "fused":
        return fused_attention_p.bind(q, k, v, mask)
    scores = jnp.einsum("bshd,bthd->bhst", q, k) / jnp.sqrt(dim)
    scores = jnp.where(mask[:, None, None, :] > 0.5, scores, -1e9)
    return jnp.einsum("bhst,bthd->bshd", jax.nn.softmax(scores, axis=-1), v)


def _fwd(q, k, v, mask, kernel):
    return _attention(q, k, v, mask, kernel), (q, k, v, mask)


def _bwd(kernel, residual, g):
    q, k, v, mask = residual
    _, pullback = jax.vjp(lambda q, k, v: _attention(q, k, v, mask, "reference"), q, k, v)
    return (*pullback(g), jnp.zeros_like(mask))


def _bwd_unmasked(kernel, residual, g):
    q, k, v, mask = residual
    _, pullback = jax.vjp(lambda q, k, v: _attention(q, k, v, jnp.ones_like(mask), "reference"), q, k, v)
    return (*pullback(g), jnp.zeros_like(mask))


attention = jax.custom_vjp(_attention, nondiff_argnums=(4,))
attention.defvjp(_fwd, _bwd)

attention_wrong_bwd = jax.custom_vjp(_attention, nondiff_argnums=(4,))
attention_wrong_bwd.defvjp(_fwd, _bwd_unmasked)


def masked_attention(q, k, v, mask, *, kernel: Literal["fused", "reference"] = "reference"):
    """Masked multi-head attention.

    Args:
        q: Queries of shape ``(batch, seq, heads, dim)``.
        k: Keys of shape ``(batch, seq, heads, dim)``.
        v: Values of shape ``(batch, seq, heads, dim)``.
        mask: Which keys are valid, shape ``(batch, seq)``.
    """
    return partial(attention, kernel=kernel)(q, k, v, mask)
