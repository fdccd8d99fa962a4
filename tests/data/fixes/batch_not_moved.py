"""A batching rule that assumes the batch axis is at 0: it reverses each example along axis 1 without moving the
batch axis first, so vmap with in_axes=1 reverses the wrong axis."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"flip_p": {"args": ["f32[4]"]}}

flip_p = Primitive("flip")


def _flip_impl(values):
    return jnp.flip(values, axis=0)


def _flip_abstract_eval(values):
    return ShapedArray(values.shape, values.dtype)


def _flip_batching(batched_args, batch_dims):  # jaxdiag-expect: JXB005
    (values,), (bv,) = batched_args, batch_dims
    return jnp.flip(values, axis=1), bv


flip_p.def_impl(_flip_impl)
flip_p.def_abstract_eval(_flip_abstract_eval)
batching.primitive_batchers[flip_p] = _flip_batching
mlir.register_lowering(flip_p, mlir.lower_fun(_flip_impl, multiple_results=False))
