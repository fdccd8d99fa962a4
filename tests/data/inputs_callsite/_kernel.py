"""A kernel class: each instance holds a Primitive whose rules need `outs`, the output's shape structs, which the
callers build at run time from their operands' shapes (no literal anywhere in the source holds them)."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


class OutKernel:
    def __init__(self, name, kernel):
        self.kernel = kernel
        self.primitive = Primitive(name)
        self.primitive.def_impl(self._impl)
        self.primitive.def_abstract_eval(self._abstract_eval)
        mlir.register_lowering(self.primitive, mlir.lower_fun(self._impl, multiple_results=False))
        ad.primitive_jvps[self.primitive] = self._jvp
        batching.primitive_batchers[self.primitive] = self._batch

    def _impl(self, *args, outs, **params):
        return self.kernel(*args, **params).astype(outs[0].dtype)

    def _abstract_eval(self, *avals, outs, **params):
        return jax.core.ShapedArray(outs[0].shape, outs[0].dtype)

    def _jvp(self, primals, tangents, *, outs, transpose):
        w, x = primals
        tw, tx = (jnp.zeros_like(p) if type(t) is ad.Zero else t for p, t in zip(primals, tangents))
        out = self.primitive.bind(w, x, outs=outs, transpose=transpose)
        return out, self.kernel(tw, x, transpose=transpose) + self.kernel(w, tx, transpose=transpose)

    def _batch(self, args, axes, *, outs, transpose):
        w, x = args
        w = jnp.moveaxis(w, axes[0], 0) if axes[0] is not None else w
        x = jnp.moveaxis(x, axes[1], 0) if axes[1] is not None else x
        fn = lambda w_, x_: self.kernel(w_, x_, transpose=transpose)  # noqa: E731
        return jax.vmap(fn, in_axes=(0 if axes[0] is not None else None, 0 if axes[1] is not None else None))(
            w, x), 0

    def __call__(self, *args, outs, **params):
        return self.primitive.bind(*args, outs=tuple(outs), **params)
