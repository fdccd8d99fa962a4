"""JXR007 good: the linear primitive has a transpose rule (scaling by 3 is its own transpose)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"scale3_p": {"args": ["f32[3]"]}}

scale3_p = Primitive("scale3")


def _scale3_impl(x):
    return 3.0 * x


def _scale3_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _scale3_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return scale3_p.bind(x), scale3_p.bind(ad.instantiate_zeros(t))


def _scale3_transpose(ct, x):
    return [scale3_p.bind(ad.instantiate_zeros(ct))]


scale3_p.def_impl(_scale3_impl)
scale3_p.def_abstract_eval(_scale3_abstract_eval)
mlir.register_lowering(scale3_p, mlir.lower_fun(_scale3_impl, multiple_results=False))
batching.defvectorized(scale3_p)
ad.primitive_jvps[scale3_p] = _scale3_jvp
ad.primitive_transposes[scale3_p] = _scale3_transpose
