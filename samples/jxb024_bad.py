"""JXB024 bad: the rule returns the loss output as one batch-wide value (dim None): the sum of every example's loss.
That is right only if a batch total is the design; each example has its own loss, so under vmap every example
silently gets the total instead."""

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


def _huber_batching(batched_args, batch_dims):
    (r,), (br,) = batched_args, batch_dims
    clipped = jnp.clip(r, -1.0, 1.0)
    loss = jnp.sum(jnp.where(jnp.abs(r) < 1.0, 0.5 * r * r, jnp.abs(r) - 0.5))
    return (clipped, loss), (br, None)  # jaxdiag-expect: JXB024


huber_p.def_impl(_huber_impl)
huber_p.def_abstract_eval(_huber_abstract_eval)
batching.primitive_batchers[huber_p] = _huber_batching
mlir.register_lowering(huber_p, mlir.lower_fun(_huber_impl, multiple_results=True))
