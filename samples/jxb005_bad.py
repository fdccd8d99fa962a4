"""JXB005 bad: the rule moves the batch axis to the front but binds with the same `axis`, which now points at
the batch axis: shapes are right, values silently wrong (a cumulative sum across examples). The correct rule
shifts the axis by one."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"cumsum_p": {"args": ["f32[4,3]"], "params": {"axis": 0}}}

cumsum_p = Primitive("my_cumsum")


def _cumsum_impl(x, *, axis):
    return jnp.cumsum(x, axis=axis)


def _cumsum_abstract_eval(x, *, axis):
    return ShapedArray(x.shape, x.dtype)


def _cumsum_batching(batched_args, batch_dims, *, axis):  # jaxdiag-expect: JXB005
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    return cumsum_p.bind(x, axis=axis), 0


cumsum_p.def_impl(_cumsum_impl)
cumsum_p.def_abstract_eval(_cumsum_abstract_eval)
batching.primitive_batchers[cumsum_p] = _cumsum_batching
mlir.register_lowering(cumsum_p, mlir.lower_fun(_cumsum_impl, multiple_results=False))
