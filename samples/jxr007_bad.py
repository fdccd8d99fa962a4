"""JXR007 bad: a linear primitive whose JVP re-binds it on the tangent (correct), but no transpose rule is
registered: jax.jvp works, jax.grad fails with "Transpose rule (for reverse-mode differentiation) for 'scale3'
not implemented"."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"scale3_p": {"args": ["f32[3]"]}}

scale3_p = Primitive("scale3")  # jaxdiag-expect: JXR007


def _scale3_impl(x):
    return 3.0 * x


def _scale3_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _scale3_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return scale3_p.bind(x), scale3_p.bind(ad.instantiate_zeros(t))


scale3_p.def_impl(_scale3_impl)
scale3_p.def_abstract_eval(_scale3_abstract_eval)
mlir.register_lowering(scale3_p, mlir.lower_fun(_scale3_impl, multiple_results=False))
batching.defvectorized(scale3_p)
ad.primitive_jvps[scale3_p] = _scale3_jvp
