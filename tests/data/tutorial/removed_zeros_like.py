"""Tutorial-style (the JAX "How primitives work" tutorial): the JVP rule instantiates a symbolic-zero tangent with
`lax.zeros_like_array`, which newer JAX releases removed."""

import jax.numpy as jnp  # noqa: F401  (the verified fix replaces lax.zeros_like_array by jnp.zeros_like)
from jax import lax
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"multiply_add_p": {"args": ["f32[3]", "f32[3]", "f32[3]"]}}

multiply_add_p = Primitive("multiply_add")


def _multiply_add_impl(x, y, z):
    return x * y + z


def _multiply_add_abstract_eval(x, y, z):
    return ShapedArray(x.shape, x.dtype)


def _multiply_add_jvp(primals, tangents):
    x, y, z = primals
    xt, yt, zt = tangents
    out = multiply_add_p.bind(x, y, z)

    def make_zero(tan):
        return lax.zeros_like_array(x) if type(tan) is ad.Zero else tan  # jaxdiag-expect: JXR008

    return out, make_zero(xt) * y + x * make_zero(yt) + make_zero(zt)


multiply_add_p.def_impl(_multiply_add_impl)
multiply_add_p.def_abstract_eval(_multiply_add_abstract_eval)
ad.primitive_jvps[multiply_add_p] = _multiply_add_jvp
batching.defbroadcasting(multiply_add_p)
mlir.register_lowering(multiply_add_p, mlir.lower_fun(_multiply_add_impl, multiple_results=False))
