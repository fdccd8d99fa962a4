"""A softmax primitive whose batching rule forgets to shift `axis` (JXB005) and whose JVP is wrong (JXG001):
under `jaxdiag grad`, the vmap(grad f) mismatch must be blamed on the batching rule, not the JVP."""

import jax, jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir, ad
from jax.core import ShapedArray

softmax_p = Primitive("my_softmax")

def _impl(x, *, axis):
    e = jnp.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)

def _abstract(x, *, axis):
    return ShapedArray(x.shape, x.dtype)

def _batch(args, dims, *, axis):
    (x,), (d,) = args, dims
    x = jnp.moveaxis(x, d, 0)
    return softmax_p.bind(x, axis=axis), 0

def _jvp(primals, tangents, *, axis):
    (x,), (t,) = primals, tangents
    y = softmax_p.bind(x, axis=axis)
    return y, y * t

softmax_p.def_impl(_impl)
softmax_p.def_abstract_eval(_abstract)
mlir.register_lowering(softmax_p, mlir.lower_fun(_impl, multiple_results=False))
batching.primitive_batchers[softmax_p] = _batch
ad.primitive_jvps[softmax_p] = _jvp

def softmax(x, axis=-1):
    return softmax_p.bind(x, axis=axis % x.ndim)
