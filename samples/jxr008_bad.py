"""JXR008 bad: the batching rule tests `bd is batching.not_mapped`, an internal that JAX 0.10 removed (unbatched
is plain `None`): the rule crashes with `AttributeError: module 'jax._src.interpreters.batching' has no attribute
'not_mapped'` (jax-finufft#227)."""

from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"weighted_p": {"args": ["f32[4,3]", "f32[3]"]}}

weighted_p = Primitive("weighted")


def _weighted_impl(x, w):
    return x * w


def _weighted_abstract_eval(x, w):
    return ShapedArray(x.shape, x.dtype)


def _weighted_batching(batched_args, batch_dims):
    x, w = batched_args
    bx, bw = batch_dims
    size = x.shape[bx] if bx is not batching.not_mapped else w.shape[bw]  # jaxdiag-expect: JXR008
    x = batching.bdim_at_front(x, bx, size)
    w = batching.bdim_at_front(w, bw, size)
    return x * w[:, None, :], 0


weighted_p.def_impl(_weighted_impl)
weighted_p.def_abstract_eval(_weighted_abstract_eval)
batching.primitive_batchers[weighted_p] = _weighted_batching
mlir.register_lowering(weighted_p, mlir.lower_fun(_weighted_impl, multiple_results=False))
