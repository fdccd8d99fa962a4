"""JXG007 bad: the JVP rule of an elementwise exp reduces the tangent with a dot product, so the tangent is a
scalar for a (3,) output. jax.jvp silently returns the () tangent; jax.grad fails later with an unrelated
IndexError."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"my_exp_p": {"args": ["f32[3]"]}}

my_exp_p = Primitive("my_exp")


def _my_exp_impl(x):
    return jnp.exp(x)


def _my_exp_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _my_exp_jvp(primals, tangents):  # jaxdiag-expect: JXG007
    (x,), (t,) = primals, tangents
    y = my_exp_p.bind(x)
    return y, jnp.dot(y, t)


my_exp_p.def_impl(_my_exp_impl)
my_exp_p.def_abstract_eval(_my_exp_abstract_eval)
mlir.register_lowering(my_exp_p, mlir.lower_fun(_my_exp_impl, multiple_results=False))
batching.defvectorized(my_exp_p)
ad.primitive_jvps[my_exp_p] = _my_exp_jvp
