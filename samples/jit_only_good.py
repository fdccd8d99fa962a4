"""A primitive whose impl refuses to run eagerly: its module binds it only inside `jax.jit` (the lowering is the
kernel), so its impl never runs in the user's program. Checked under jax.jit like their code, this is clean."""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"fused_scale_p": {"args": ["f32[4]"]}, "normalize": {"args": ["f32[4]"]}}

fused_scale_p = Primitive("fused_scale")


def _fused_scale_impl(x):
    raise NotImplementedError("fused_scale runs only under jax.jit: its lowering is the kernel")


def _fused_scale_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


fused_scale_p.def_impl(_fused_scale_impl)
fused_scale_p.def_abstract_eval(_fused_scale_abstract_eval)
batching.defvectorized(fused_scale_p)
mlir.register_lowering(fused_scale_p, mlir.lower_fun(lambda x: 2.0 * x, multiple_results=False))


@jax.jit
def normalize(x):
    return fused_scale_p.bind(x) / jnp.linalg.norm(x)
