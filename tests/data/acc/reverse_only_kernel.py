"""Kernels whose derivative exists in reverse mode only, as FFI libraries write them (samples/jxn019_bad.py): the JVP
rule's tangent is a primitive with a transpose rule but no impl or lowering. `scan_sum_p`'s reverse kernel is right;
`scan_sum_doubled_p`'s doubles every cotangent, so jax.grad is twice the derivative (jax.jvp cannot run at all)."""

import jax
import jax.numpy as jnp
from jax.interpreters import ad, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive


def _running_sum(x):
    return jnp.cumsum(x, axis=-1)


def _reverse_running_sum(ct):
    return jnp.flip(jnp.cumsum(jnp.flip(ct, axis=-1), axis=-1), axis=-1)


def _doubled_reverse_running_sum(ct):
    return 2.0 * _reverse_running_sum(ct)


def _shaped(x):
    return jax.core.ShapedArray(x.shape, x.dtype)


def _kernel(name, fn):
    prim = Primitive(name)
    prim.def_impl(fn)
    prim.def_abstract_eval(_shaped)
    mlir.register_lowering(prim, mlir.lower_fun(fn, multiple_results=False))
    return prim


scan_sum_p = _kernel("scan_sum", _running_sum)
scan_sum_reverse_p = _kernel("scan_sum_reverse", _reverse_running_sum)
scan_sum_tangent_p = Primitive("scan_sum_tangent")
scan_sum_tangent_p.def_abstract_eval(_shaped)

scan_sum_doubled_p = _kernel("scan_sum_doubled", _running_sum)
scan_sum_doubled_reverse_p = _kernel("scan_sum_doubled_reverse", _doubled_reverse_running_sum)
scan_sum_doubled_tangent_p = Primitive("scan_sum_doubled_tangent")
scan_sum_doubled_tangent_p.def_abstract_eval(_shaped)


def _scan_sum_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return scan_sum_p.bind(x), scan_sum_tangent_p.bind(ad.instantiate_zeros(t))


def _scan_sum_tangent_transpose(ct, t):
    return [scan_sum_reverse_p.bind(ad.instantiate_zeros(ct))]


def _scan_sum_doubled_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return scan_sum_doubled_p.bind(x), scan_sum_doubled_tangent_p.bind(ad.instantiate_zeros(t))


def _scan_sum_doubled_tangent_transpose(ct, t):  # jaxdiag-expect: JXG001
    return [scan_sum_doubled_reverse_p.bind(ad.instantiate_zeros(ct))]


ad.primitive_jvps[scan_sum_p] = _scan_sum_jvp
ad.primitive_transposes[scan_sum_tangent_p] = _scan_sum_tangent_transpose
ad.primitive_jvps[scan_sum_doubled_p] = _scan_sum_doubled_jvp
ad.primitive_transposes[scan_sum_doubled_tangent_p] = _scan_sum_doubled_tangent_transpose
