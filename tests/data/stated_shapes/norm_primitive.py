"""A layer-norm primitive of rank-3 activations (batch, tokens, features) and a per-feature scale: its impl and
abstract eval unpack the activations' shape, and nothing else says what the operands are. Its batching rule moves
the batch axis but scales along the wrong axis when the scale is batched (`norm_bad_p`)."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

norm_p = Primitive("stated_norm")
norm_bad_p = Primitive("stated_norm_bad")


def _norm_impl(x, scale):
    batch, tokens, features = x.shape
    centred = x - x.mean(axis=-1, keepdims=True)
    return jnp.einsum("btf,f->btf", centred / jnp.sqrt((centred ** 2).mean(axis=-1, keepdims=True) + 1e-5), scale)


def _norm_abstract(x, scale):
    batch, tokens, features = x.shape
    if scale.shape != (features,):
        raise TypeError(f"scale must have shape ({features},), got {scale.shape}")
    return jax.core.ShapedArray(x.shape, x.dtype)


def _batch(args, dims, good):
    x, scale = args
    x = jnp.moveaxis(x, dims[0], 0) if dims[0] is not None else x
    if dims[1] is None:
        size = x.shape[0]
        out = jnp.stack([_norm_impl(x[i], scale) for i in range(size)]) if dims[0] is not None else None
        return out, 0
    scale = jnp.moveaxis(scale, dims[1], 0)
    size = scale.shape[0]
    xs = x if dims[0] is not None else jnp.broadcast_to(x, (size, *x.shape))
    scales = scale if good else scale[::-1]
    return jnp.stack([_norm_impl(xs[i], scales[i]) for i in range(size)]), 0


for prim, good in ((norm_p, True), (norm_bad_p, False)):
    prim.def_impl(_norm_impl)
    prim.def_abstract_eval(_norm_abstract)
    mlir.register_lowering(prim, mlir.lower_fun(_norm_impl, multiple_results=False))
    batching.primitive_batchers[prim] = lambda args, dims, good=good: _batch(args, dims, good)


def layer_norm(x, scale):
    return norm_p.bind(x, scale)


def layer_norm_bad(x, scale):
    return norm_bad_p.bind(x, scale)


_ = np
