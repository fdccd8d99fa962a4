"""JXR001 bad: the primitive has a lowering, so `jax.jit` works and the jitted tests pass, but `def_impl` was never
called: every eager call fails with `NotImplementedError: Evaluation rule for 'scale' not implemented`.
"""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"scale_p": {"args": ["f32[4,3]"], "params": {"factor": 2.0}}}

scale_p = Primitive("scale")  # jaxdiag-expect: JXR001


def _scale_impl(x, *, factor):
    return x * jnp.asarray(factor, x.dtype)


def _scale_abstract_eval(x, *, factor):
    return ShapedArray(x.shape, x.dtype)


def _scale_batching(batched_args, batch_dims, *, factor):
    (x,), (bx,) = batched_args, batch_dims
    return scale_p.bind(x, factor=factor), bx


scale_p.def_abstract_eval(_scale_abstract_eval)
batching.primitive_batchers[scale_p] = _scale_batching
mlir.register_lowering(scale_p, mlir.lower_fun(_scale_impl, multiple_results=False))
# missing: scale_p.def_impl(_scale_impl)
