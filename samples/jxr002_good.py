"""JXR002 good: the abstract eval returns the output's ShapedArray, so the primitive traces under jit and grad."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"softplus_p": {"args": ["f32[4,3]"]}}

softplus_p = Primitive("softplus")


def _softplus_impl(x):
    return jnp.logaddexp(x, jnp.zeros_like(x))


def _softplus_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _softplus_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    return softplus_p.bind(x), bx


softplus_p.def_impl(_softplus_impl)
softplus_p.def_abstract_eval(_softplus_abstract_eval)
batching.primitive_batchers[softplus_p] = _softplus_batching
mlir.register_lowering(softplus_p, mlir.lower_fun(_softplus_impl, multiple_results=False))
