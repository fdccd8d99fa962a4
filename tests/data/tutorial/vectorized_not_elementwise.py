"""Tutorial-style: `batching.defvectorized` on a primitive whose impl is not batch-aware (it reduces every axis)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"total_p": {"args": ["f32[3]"]}}

total_p = Primitive("total")


def _total_impl(x):
    return jnp.sum(x) * jnp.ones_like(x)


def _total_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


total_p.def_impl(_total_impl)
total_p.def_abstract_eval(_total_abstract_eval)
batching.defvectorized(total_p)  # jaxdiag-expect: JXB005 registration
mlir.register_lowering(total_p, mlir.lower_fun(_total_impl, multiple_results=False))
