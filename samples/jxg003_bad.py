"""JXG003 bad: the transpose rule returns a bare array. JAX expects one cotangent per argument and fails with
"safe_zip() argument 1 has length 3 but argument 0 has length 1"."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"double_p": {"args": ["f32[3]"]}}

double_p = Primitive("double")


def _double_impl(x):
    return 2.0 * x


def _double_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _double_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return double_p.bind(x), double_p.bind(ad.instantiate_zeros(t))


def _double_transpose(ct, x):  # jaxdiag-expect: JXG003
    return 2.0 * ct


double_p.def_impl(_double_impl)
double_p.def_abstract_eval(_double_abstract_eval)
mlir.register_lowering(double_p, mlir.lower_fun(_double_impl, multiple_results=False))
batching.defvectorized(double_p)
ad.primitive_jvps[double_p] = _double_jvp
ad.primitive_transposes[double_p] = _double_transpose
