"""An op class whose primitive `register` makes at import: discovery finds it as `Halve.primitive`."""

import jax.numpy as jnp
from jax.core import ShapedArray

from .registry import register


class Halve:
    name = "halve"

    @staticmethod
    def impl(x):
        return jnp.asarray(x) * 0.5

    @staticmethod
    def abstract(x):
        return ShapedArray(x.shape, x.dtype)

    @staticmethod
    def batching(args, dims):
        (x,), (d,) = args, dims
        return Halve.primitive.bind(x), d


register(Halve)
