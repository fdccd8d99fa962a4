"""Primitives made by the package's factory as this module is imported."""

import jax
import jax.numpy as jnp

from .registry import make_primitive


def _cube_impl(x):
    return x * x * x


def _cube_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return cube_p.bind(x), 3.0 * x * x * t


cube_p = make_primitive("inputs_factory_cube", _cube_impl, lambda x: jax.core.ShapedArray(x.shape, x.dtype),
                        _cube_jvp)


def cube(x):
    return cube_p.bind(jnp.asarray(x))
