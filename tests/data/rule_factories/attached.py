"""A factory called at import, in the style of FFI wrappers: it makes the primitive it returns and a helper
primitive for the JVP's tangent, attached to the returned one's JVP rule only (never returned, never a module
attribute), its rules partials of module-level functions. Checking `scale_p` binds the helper in its JVP and checks
it as its nested subject, so the helper's site is reached: never "not checked" (JXN012)."""

import functools

from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


def _scaled(factor, x):
    return x * factor


def _same_aval(x):
    return x


def _transpose(factor, ct, t):
    return [ct * factor]


def _jvp(prim, tangent_p, primals, tangents):
    (x,), (t,) = primals, tangents
    return prim.bind(x), tangent_p.bind(ad.instantiate_zeros(t))


def _build(name, factor):
    prim = Primitive(name)
    prim.def_impl(functools.partial(_scaled, factor))
    prim.def_abstract_eval(_same_aval)
    mlir.register_lowering(prim, mlir.lower_fun(functools.partial(_scaled, factor), multiple_results=False))
    batching.defvectorized(prim)

    tangent_p = Primitive(f"{name}_tangent")
    tangent_p.def_impl(functools.partial(_scaled, factor))
    tangent_p.def_abstract_eval(_same_aval)
    mlir.register_lowering(tangent_p, mlir.lower_fun(functools.partial(_scaled, factor), multiple_results=False))
    batching.defvectorized(tangent_p)
    ad.deflinear2(tangent_p, functools.partial(_transpose, factor))

    ad.primitive_jvps[prim] = functools.partial(_jvp, prim, tangent_p)
    return prim


scale_p = _build("scale", 3.0)
