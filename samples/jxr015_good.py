"""JXR015 good: `mlir.lower_fun(impl)` registered without `platform=` lowers the jax.numpy impl on every platform,
so the declared CUDA target has a lowering too."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"softclip_p": {"args": ["f32[4]"], "platforms": ["cpu", "cuda"]}}

softclip_p = Primitive("softclip")


def _softclip_impl(x):
    return jnp.tanh(x) * 3.0


def _softclip_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


softclip_p.def_impl(_softclip_impl)
softclip_p.def_abstract_eval(_softclip_abstract_eval)
batching.defvectorized(softclip_p)
mlir.register_lowering(softclip_p, mlir.lower_fun(_softclip_impl, multiple_results=False))
