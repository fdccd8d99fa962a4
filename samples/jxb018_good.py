"""JXB018 good: the scaling primitive of jxb018_bad.py with a batching rule that broadcasts an unbatched operand to the
full batch size: the transpose rule then gets operands of one batch shape, returns cotangents of that shape, and
JAX's transpose of the broadcast sums them over the batch. `jax.vjp(jax.vmap(...))` equals the per-example VJPs for
every in_axes."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"scale_p": {"args": ["f32[3]", "f32[3]"]}}

scale_p = Primitive("scale_rows")


def _scale_impl(x, w):
    return x * w


def _scale_abstract_eval(x, w):
    return ShapedArray(jnp.broadcast_shapes(x.shape, w.shape), x.dtype)


def _front(v, d, size):
    return jnp.broadcast_to(v, (size, *v.shape)) if d is None else jnp.moveaxis(v, d, 0)


def _scale_batching(args, dims):
    (x, w), (bx, bw) = args, dims
    size = x.shape[bx] if bx is not None else w.shape[bw]
    return scale_p.bind(_front(x, bx, size), _front(w, bw, size)), 0


def _scale_jvp(primals, tangents):
    (x, w), (dx, dw) = primals, tangents
    out = scale_p.bind(x, w)
    t = 0.0 if type(dx) is ad.Zero else scale_p.bind(dx, w)
    t = t if type(dw) is ad.Zero else t + scale_p.bind(x, dw)
    return out, t


def _scale_transpose(ct, x, w):
    if ad.is_undefined_primal(x):
        return [scale_p.bind(ct, w), None]
    return [None, scale_p.bind(ct, x)]


scale_p.def_impl(_scale_impl)
scale_p.def_abstract_eval(_scale_abstract_eval)
mlir.register_lowering(scale_p, mlir.lower_fun(_scale_impl, multiple_results=False))
batching.primitive_batchers[scale_p] = _scale_batching
ad.primitive_jvps[scale_p] = _scale_jvp
ad.primitive_transposes[scale_p] = _scale_transpose
