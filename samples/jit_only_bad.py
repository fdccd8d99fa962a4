"""The bug jit_only_good.py avoids: `normalize` binds the primitive eagerly (no jax.jit), so its impl runs and
refuses: plain `normalize(x)` raises. Reported at the impl (JXR011)."""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"fused_scale_p": {"args": ["f32[4]"]}, "normalize": {"args": ["f32[4]"]}}

fused_scale_p = Primitive("fused_scale")


def _fused_scale_impl(x):
    raise NotImplementedError("fused_scale runs only under jax.jit: its lowering is the kernel")  # jaxdiag-expect: JXR011


def _fused_scale_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


fused_scale_p.def_impl(_fused_scale_impl)
fused_scale_p.def_abstract_eval(_fused_scale_abstract_eval)
batching.defvectorized(fused_scale_p)
mlir.register_lowering(fused_scale_p, mlir.lower_fun(lambda x: 2.0 * x, multiple_results=False))



def normalize(x):
    return fused_scale_p.bind(x) / jnp.linalg.norm(x)  # jaxdiag-expect: JXR011
