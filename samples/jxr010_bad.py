"""JXR010 bad: the lowering was copied from a sibling primitive and computes a different function (tanh-GELU
instead of SiLU): eager calls use the impl, jitted callers silently get something else."""

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


def _gelu_lowered(x):  # jaxdiag-expect: JXR010
    return x * jax.nn.sigmoid(1.702 * x)


silu_p.def_impl(_silu_impl)
silu_p.def_abstract_eval(_silu_abstract_eval)
batching.defvectorized(silu_p)
mlir.register_lowering(silu_p, mlir.lower_fun(_gelu_lowered, multiple_results=False))
