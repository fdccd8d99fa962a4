"""A primitive held by a subclass of `Primitive` whose impl and abstract eval are methods of the class (no
`def_impl`, no `def_abstract_eval`), as wrapper libraries define their tag and kernel primitives; its batching rule,
JVP and lowering are registered from `__init__`. Plain JAX runs it eagerly, under jit, grad and vmap."""

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
        return self.bind(x, w), 0


scaled_tag_p = ScaledTag("scaled_tag")


def scaled_tag(x, w):
    return scaled_tag_p.bind(x, w)
