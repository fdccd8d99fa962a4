"""JXB014 good: the same primitive batched instead of refused: the weights broadcast along the batch axis, so
`jax.vmap` matches the per-example loop for every batch dim."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"checksum_p": {"args": ["f32[4]"]}}

checksum_p = Primitive("checksum")


def _checksum_impl(x):
    return jnp.sum(x * jnp.arange(1, x.shape[0] + 1, dtype=x.dtype))


def _checksum_abstract_eval(x):
    return ShapedArray((), x.dtype)


def _checksum_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    if bx is None:
        return checksum_p.bind(x), None
    x = jnp.moveaxis(x, bx, 0)
    return jnp.sum(x * jnp.arange(1, x.shape[1] + 1, dtype=x.dtype), axis=1), 0


checksum_p.def_impl(_checksum_impl)
checksum_p.def_abstract_eval(_checksum_abstract_eval)
batching.primitive_batchers[checksum_p] = _checksum_batching
mlir.register_lowering(checksum_p, mlir.lower_fun(_checksum_impl, multiple_results=False))
