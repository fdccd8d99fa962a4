"""The factory: a Primitive with its rules, made at run time. Every primitive of the package comes from here, yet
each one is a module attribute of the module that called it at import."""

from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


def make_primitive(name, impl, abstract_eval, jvp=None):
    prim = Primitive(name)
    prim.def_impl(impl)
    prim.def_abstract_eval(abstract_eval)
    mlir.register_lowering(prim, mlir.lower_fun(impl, multiple_results=False))
    batching.defvectorized(prim)
    if jvp is not None:
        ad.primitive_jvps[prim] = jvp
    return prim
