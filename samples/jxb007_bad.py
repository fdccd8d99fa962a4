"""JXB007 bad: a multiple_results primitive must return a sequence of dims, one per output; returning the single
int `0` fails inside vmap with `TypeError: 'int' object is not iterable`."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"min_max_p": {"args": ["f32[4,3]"]}}

min_max_p = Primitive("min_max")
min_max_p.multiple_results = True


def _min_max_impl(x):
    return jnp.min(x, axis=-1), jnp.max(x, axis=-1)


def _min_max_abstract_eval(x):
    return ShapedArray(x.shape[:-1], x.dtype), ShapedArray(x.shape[:-1], x.dtype)


def _min_max_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    return (jnp.min(x, axis=-1), jnp.max(x, axis=-1)), 0  # jaxdiag-expect: JXB007


min_max_p.def_impl(_min_max_impl)
min_max_p.def_abstract_eval(_min_max_abstract_eval)
batching.primitive_batchers[min_max_p] = _min_max_batching
mlir.register_lowering(min_max_p, mlir.lower_fun(_min_max_impl, multiple_results=True))
