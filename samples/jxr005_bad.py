"""JXR005 bad: an elementwise primitive with no batching rule: `jax.vmap` fails with
`NotImplementedError: Batching rule for 'gelu_tanh' not implemented`. Its impl already handles
any shape, so `batching.defvectorized` is all it needs."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import mlir

JAXDIAG = {"gelu_tanh_p": {"args": ["f32[4,3]"]}}

gelu_tanh_p = Primitive("gelu_tanh")  # jaxdiag-expect: JXR005


def _gelu_tanh_impl(x):
    return 0.5 * x * (1.0 + jnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))


def _gelu_tanh_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


gelu_tanh_p.def_impl(_gelu_tanh_impl)
gelu_tanh_p.def_abstract_eval(_gelu_tanh_abstract_eval)
# missing: a batching rule
mlir.register_lowering(gelu_tanh_p, mlir.lower_fun(_gelu_tanh_impl, multiple_results=False))
