"""method_rules.py with a batching method that reports the batch axis at 1 where it put it at 0."""

import jax.numpy as jnp
from jax.extend import core
from jax.interpreters import ad, batching, mlir

from jax.core import ShapedArray

try:
    from jax.extend.core import no_effects
except ImportError:  # jax < 0.4.36
    from jax.core import no_effects  # type: ignore[attr-defined,no-redef]


class ScaledTag(core.Primitive):
    """`scaled_tag(x, w) = x * w`, elementwise."""

    def __init__(self, name: str):
        super().__init__(name)
        mlir.register_lowering(self, mlir.lower_fun(self.impl, multiple_results=False))
        ad.defjvp(self, lambda t, x, w: t * w, lambda t, x, w: x * t)
        batching.primitive_batchers[self] = self._batching

    def impl(self, x, w):
        return x * w

    def abstract_eval(self, x, w):
        return ShapedArray(x.shape, x.dtype), no_effects

    def _batching(self, args, dims):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        x, w = (jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size,) + a.shape)
                for a, d in zip(args, dims))
        return self.bind(x, w), 1  # jaxdiag-expect: JXB004


scaled_tag_p = ScaledTag("scaled_tag")


def scaled_tag(x, w):
    return scaled_tag_p.bind(x, w)
