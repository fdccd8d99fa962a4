"""JXR005 good: the elementwise primitive gets JAX's vectorised batching rule (`bind` on the batched input)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"gelu_tanh_p": {"args": ["f32[4,3]"]}}

gelu_tanh_p = Primitive("gelu_tanh")


def _gelu_tanh_impl(x):
    return 0.5 * x * (1.0 + jnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def _gelu_tanh_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


gelu_tanh_p.def_impl(_gelu_tanh_impl)
gelu_tanh_p.def_abstract_eval(_gelu_tanh_abstract_eval)
batching.defvectorized(gelu_tanh_p)
mlir.register_lowering(gelu_tanh_p, mlir.lower_fun(_gelu_tanh_impl, multiple_results=False))
