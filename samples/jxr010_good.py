"""JXR010 good: the lowering is the impl itself, so jit and eager agree."""

import jax
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"silu_p": {"args": ["f32[4,3]"]}}

silu_p = Primitive("silu")


def _silu_impl(x):
    return x * jax.nn.sigmoid(x)


def _silu_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


silu_p.def_impl(_silu_impl)
silu_p.def_abstract_eval(_silu_abstract_eval)
batching.defvectorized(silu_p)
mlir.register_lowering(silu_p, mlir.lower_fun(_silu_impl, multiple_results=False))
