"""`register(cls)` makes the primitive of an op class from the class's own rules and stores it on the class
(`cls.primitive = prim`); it returns nothing. The op modules call it as they are imported."""

from jax.extend import core
from jax.interpreters import batching


def register(cls):
    prim = core.Primitive(cls.name)
    prim.def_impl(cls.impl)
    prim.def_abstract_eval(cls.abstract)
    batching.primitive_batchers[prim] = cls.batching
    cls.primitive = prim
