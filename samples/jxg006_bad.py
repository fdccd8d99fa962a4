"""JXG006 bad: the JVP rule multiplies both tangents unconditionally. When only one argument is differentiated
the other tangent is a symbolic ad.Zero, and the rule fails with "unsupported operand type(s) for *: ... 'Zero'".
"""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"hypot_p": {"args": ["f32[3]", "f32[3]"]}}

hypot_p = Primitive("my_hypot")


def _hypot_impl(x, y):
    return jnp.sqrt(x * x + y * y)


def _hypot_abstract_eval(x, y):
    return ShapedArray(jnp.broadcast_shapes(x.shape, y.shape), x.dtype)


def _hypot_jvp(primals, tangents):  # jaxdiag-expect: JXG006
    (x, y), (tx, ty) = primals, tangents
    r = hypot_p.bind(x, y)
    return r, (x * tx + y * ty) / r


hypot_p.def_impl(_hypot_impl)
hypot_p.def_abstract_eval(_hypot_abstract_eval)
mlir.register_lowering(hypot_p, mlir.lower_fun(_hypot_impl, multiple_results=False))
batching.defbroadcasting(hypot_p)
ad.primitive_jvps[hypot_p] = _hypot_jvp
