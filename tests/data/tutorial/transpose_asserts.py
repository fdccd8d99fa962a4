"""Tutorial-style: the transpose rule of a bilinear primitive assumes y is always the linear argument."""

from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"mul_p": {"args": ["f32[3]", "f32[3]"]}}

mul_p = Primitive("mul_tutorial")


def _mul_impl(x, y):
    return x * y


def _mul_abstract_eval(x, y):
    return ShapedArray(x.shape, x.dtype)


def _mul_jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = mul_p.bind(x, y)
    tx = ad.instantiate_zeros(tx)
    ty = ad.instantiate_zeros(ty)
    return out, mul_p.bind(tx, y) + mul_p.bind(x, ty)


def _mul_transpose(ct, x, y):
    assert ad.is_undefined_primal(y)  # jaxdiag-expect: JXG005
    return [None, mul_p.bind(x, ct)]


mul_p.def_impl(_mul_impl)
mul_p.def_abstract_eval(_mul_abstract_eval)
ad.primitive_jvps[mul_p] = _mul_jvp
ad.primitive_transposes[mul_p] = _mul_transpose
batching.defbroadcasting(mul_p)
mlir.register_lowering(mul_p, mlir.lower_fun(_mul_impl, multiple_results=False))
