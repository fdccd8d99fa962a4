"""JXG001 bad: the JVP rule of a cosine primitive forgets the minus sign (d/dx cos x = -sin x). JAX has no way to
notice: jax.grad and jax.jvp silently return the wrong sign."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"my_cos_p": {"args": ["f32[3]"]}}

my_cos_p = Primitive("my_cos")


def _my_cos_impl(x):
    return jnp.cos(x)


def _my_cos_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _my_cos_jvp(g, x):  # jaxdiag-expect: JXG001
    return g * jnp.sin(x)


my_cos_p.def_impl(_my_cos_impl)
my_cos_p.def_abstract_eval(_my_cos_abstract_eval)
mlir.register_lowering(my_cos_p, mlir.lower_fun(_my_cos_impl, multiple_results=False))
batching.defvectorized(my_cos_p)
ad.defjvp(my_cos_p, _my_cos_jvp)
