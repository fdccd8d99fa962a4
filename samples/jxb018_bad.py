"""JXB018 bad: a scaling primitive whose batching rule gives an unbatched operand a size-1 batch dim. Broadcasting makes every
forward result right (vmap agrees with the per-example loop for every in_axes), and per example the transpose rule
is right too. But under `jax.vjp(jax.vmap(scale, in_axes=(0, None)))` the transpose rule is handed `w` with shape
(1, n) and returns `ct * x`, shape (batch, n), for it: plain JAX fails with "Expected cotangent type float32[1,3] but
got float32[5,3]" (jax 0.10) or a reshape error (jax 0.5), naming no rule (JXB018, at the transpose rule):

    _, pullback = jax.vjp(jax.vmap(scale_p.bind, in_axes=(0, None)), jnp.ones((5, 3)), jnp.ones(3))
    pullback(jnp.ones((5, 3)))
"""

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


def _front(v, d):
    return jnp.reshape(v, (1, *v.shape)) if d is None else jnp.moveaxis(v, d, 0)  # size 1 when unbatched


def _scale_batching(args, dims):
    (x, w), (bx, bw) = args, dims
    return scale_p.bind(_front(x, bx), _front(w, bw)), 0


def _scale_jvp(primals, tangents):
    (x, w), (dx, dw) = primals, tangents
    out = scale_p.bind(x, w)
    t = 0.0 if type(dx) is ad.Zero else scale_p.bind(dx, w)
    t = t if type(dw) is ad.Zero else t + scale_p.bind(x, dw)
    return out, t


def _scale_transpose(ct, x, w):  # jaxdiag-expect: JXB018
    if ad.is_undefined_primal(x):
        return [scale_p.bind(ct, w), None]
    return [None, scale_p.bind(ct, x)]


scale_p.def_impl(_scale_impl)
scale_p.def_abstract_eval(_scale_abstract_eval)
mlir.register_lowering(scale_p, mlir.lower_fun(_scale_impl, multiple_results=False))
batching.primitive_batchers[scale_p] = _scale_batching
ad.primitive_jvps[scale_p] = _scale_jvp
ad.primitive_transposes[scale_p] = _scale_transpose
