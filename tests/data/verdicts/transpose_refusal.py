"""Linear primitives whose transpose rules fail: `sealed_p`'s rule refuses in its own body (reverse mode is not
offered, forward mode is), `cracked_p`'s fails by accident (a reshape its cotangent does not fit)."""

import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, mlir


def _double(x):
    return 2.0 * x


def _linear(name, transpose):
    prim = Primitive(name)
    prim.def_impl(_double)
    prim.def_abstract_eval(lambda x: x)
    ad.primitive_jvps[prim] = lambda primals, tangents: (prim.bind(*primals),
                                                         prim.bind(ad.instantiate_zeros(tangents[0])))
    ad.primitive_transposes[prim] = transpose
    mlir.register_lowering(prim, mlir.lower_fun(_double, multiple_results=False))
    return prim


def _sealed_transpose(ct, x):
    raise RuntimeError("sealed cannot be reverse-mode differentiated: use jax.jvp")


def _cracked_transpose(ct, x):
    return [2.0 * jnp.reshape(ct, (-1, 7))]


sealed_p = _linear("sealed", _sealed_transpose)
cracked_p = _linear("cracked", _cracked_transpose)
