"""A function with a pure_callback (vmap_method="sequential", always correct) and a user primitive whose batching
rule sums over the batch axis too. The whole-function vmap-vs-loop check still runs for functions with callbacks:
with every callback set to sequential the mismatch persists, so the defect is elsewhere and is reported (JXB005),
next to the primitive's own finding."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"normalized_log": {"args": ["f32[4]@positive"]}, "total_p": {"args": ["f32[4]@positive"]}}

total_p = Primitive("total_over_batch")


def _total_impl(x):
    return jnp.sum(x, axis=-1)


def _total_abstract_eval(x):
    return ShapedArray(x.shape[:-1], x.dtype)


def _total_batching(batched_args, batch_dims):  # jaxdiag-expect: JXB005
    (x,), (bx,) = batched_args, batch_dims
    return jnp.broadcast_to(jnp.sum(x), (x.shape[bx],)), 0  # sums the batch axis too


total_p.def_impl(_total_impl)
total_p.def_abstract_eval(_total_abstract_eval)
mlir.register_lowering(total_p, mlir.lower_fun(_total_impl, multiple_results=False))
batching.primitive_batchers[total_p] = _total_batching


def _log(x):
    return np.log(x).astype(x.dtype)


def normalized_log(x):  # jaxdiag-expect: JXB005
    logs = jax.pure_callback(_log, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="sequential")
    return logs / total_p.bind(x)
