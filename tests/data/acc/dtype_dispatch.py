"""A function that dispatches on its inputs' dtype, as sparse solvers' wrappers do: `double(x)` binds `double_real_p`
for real inputs and `double_complex_p` for complex ones (`double_wrong` binds `double_complex_wrong_p`, whose JVP
doubles the tangent once more). Each kernel (a NumPy callback here, a compiled one there) rejects any buffer type but
its own with a message that names none, so no primitive's inputs can be inferred on its own, and the complex ones are
reached only by calling the function on complex inputs: before, they were never checked."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive


def _kernel(kind):
    def run(x):
        if x.dtype.kind != kind:
            raise ValueError("unexpected buffer layout")
        return 2 * x

    return run


def _primitive(name, kind, tangent_scale):
    prim = Primitive(name)
    run = _kernel(kind)

    def impl(x):
        return jax.pure_callback(run, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="expand_dims")

    prim.def_impl(impl)
    prim.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(prim, mlir.lower_fun(impl, multiple_results=False))
    ad.primitive_jvps[prim] = lambda primals, tangents: (
        prim.bind(*primals), tangent_scale * prim.bind(ad.instantiate_zeros(tangents[0])))
    ad.primitive_transposes[prim] = lambda ct, x: [tangent_scale * prim.bind(ad.instantiate_zeros(ct))]
    batching.defvectorized(prim)
    return prim


double_real_p = _primitive("double_real", "f", 1.0)
double_complex_p = _primitive("double_complex", "c", 1.0)
double_complex_wrong_p = _primitive("double_complex_wrong", "c", 2.0)


def double(x):
    """Twice `x`, real or complex."""
    if jnp.iscomplexobj(x):
        return double_complex_p.bind(x.astype(jnp.complex64))
    return double_real_p.bind(x)


def double_wrong(x):
    """Twice `x`, complex."""
    if jnp.iscomplexobj(x):
        return double_complex_wrong_p.bind(x.astype(jnp.complex64))
    return double_real_p.bind(x)
