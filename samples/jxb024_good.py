"""JXB024 good: the same total loss, batch-wide by design. The primitive's second output is the loss that training
logs for the whole batch, so under vmap its batching rule deliberately returns the batch's total, unbatched, and
says so with an `intended` marker on its def line (it silences JXB024 only)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"huber_p": {"args": ["f32[3]"]}}

huber_p = Primitive("huber")
huber_p.multiple_results = True


def _huber_impl(r):
    clipped = jnp.clip(r, -1.0, 1.0)
    return clipped, jnp.sum(jnp.where(jnp.abs(r) < 1.0, 0.5 * r * r, jnp.abs(r) - 0.5))


def _huber_abstract_eval(r):
    return ShapedArray(r.shape, r.dtype), ShapedArray((), r.dtype)


def _huber_batching(batched_args, batch_dims):  # jaxdiag: intended[JXB024]
    (r,), (br,) = batched_args, batch_dims
    clipped = jnp.clip(r, -1.0, 1.0)
    total = jnp.sum(jnp.where(jnp.abs(r) < 1.0, 0.5 * r * r, jnp.abs(r) - 0.5))  # the whole batch's loss
    return (clipped, total), (br, None)


huber_p.def_impl(_huber_impl)
huber_p.def_abstract_eval(_huber_abstract_eval)
batching.primitive_batchers[huber_p] = _huber_batching
mlir.register_lowering(huber_p, mlir.lower_fun(_huber_impl, multiple_results=True))
