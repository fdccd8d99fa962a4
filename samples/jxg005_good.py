"""JXG005 good: the transpose branches on which argument is the UndefinedPrimal, and sums each cotangent back to its
argument's shape (`batching.defbroadcasting` gives an argument left unbatched by vmap size-1 axes)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"mymul_p": {"args": ["f32[3]", "f32[3]"]}}

mymul_p = Primitive("mymul")


def _mymul_impl(a, b):
    return a * b


def _mymul_abstract_eval(a, b):
    return ShapedArray(jnp.broadcast_shapes(a.shape, b.shape), a.dtype)


def _mymul_jvp(primals, tangents):
    (a, b), (ta, tb) = primals, tangents
    ta, tb = ad.instantiate_zeros(ta), ad.instantiate_zeros(tb)
    return mymul_p.bind(a, b), mymul_p.bind(ta, b) + mymul_p.bind(a, tb)


def _sum_to(t, shape):
    t = jnp.sum(t, axis=tuple(range(t.ndim - len(shape))))
    return jnp.sum(t, axis=tuple(i for i, n in enumerate(shape) if n == 1 and t.shape[i] != 1), keepdims=True)


def _mymul_transpose(ct, a, b):
    if ad.is_undefined_primal(a):
        return [_sum_to(mymul_p.bind(ct, b), a.aval.shape), None]
    return [None, _sum_to(mymul_p.bind(a, ct), b.aval.shape)]


mymul_p.def_impl(_mymul_impl)
mymul_p.def_abstract_eval(_mymul_abstract_eval)
mlir.register_lowering(mymul_p, mlir.lower_fun(_mymul_impl, multiple_results=False))
batching.defbroadcasting(mymul_p)
ad.primitive_jvps[mymul_p] = _mymul_jvp
ad.primitive_transposes[mymul_p] = _mymul_transpose
