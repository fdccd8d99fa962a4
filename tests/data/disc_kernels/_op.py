"""The kernel class: one Primitive per instance, its impl and abstract eval shared methods of the class."""

import jax
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


class Kernel:
    def __init__(self, name, kernel, jvp=None):
        self.kernel = kernel
        self.primitive = Primitive(name)
        self.primitive.def_impl(self._impl)
        self.primitive.def_abstract_eval(self._abstract_eval)
        batching.defvectorized(self.primitive)
        mlir.register_lowering(self.primitive, mlir.lower_fun(self._impl, multiple_results=False))
        if jvp is not None:
            self.jvp = jvp
            ad.primitive_jvps[self.primitive] = self._jvp

    def _impl(self, *args, **params):
        return self.kernel(*args, **params)

    def _abstract_eval(self, *avals, **params):
        out = jax.eval_shape(lambda *a: self.kernel(*a, **params), *avals)
        return jax.core.ShapedArray(out.shape, out.dtype)

    def _jvp(self, primals, tangents, **params):
        # shared by every kernel: forwards to the kernel's own derivative
        return self.primitive.bind(*primals, **params), self.jvp(*primals, *tangents, **params)

    def __call__(self, *args, **params):
        return self.primitive.bind(*args, **params)
