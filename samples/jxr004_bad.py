"""JXR004 bad: impl, abstract eval and batching rule, but no lowering: `jax.jit` of anything using the primitive
fails with `NotImplementedError: MLIR translation rule for primitive 'hard_tanh' not found for platform cpu`.
"""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching

JAXDIAG = {"hard_tanh_p": {"args": ["f32[4,3]"]}}

hard_tanh_p = Primitive("hard_tanh")  # jaxdiag-expect: JXR004


def _hard_tanh_impl(x):
    return jnp.clip(x, -1.0, 1.0)


def _hard_tanh_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _hard_tanh_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    return hard_tanh_p.bind(x), bx


hard_tanh_p.def_impl(_hard_tanh_impl)
hard_tanh_p.def_abstract_eval(_hard_tanh_abstract_eval)
batching.primitive_batchers[hard_tanh_p] = _hard_tanh_batching
# missing: mlir.register_lowering(hard_tanh_p, ...)
