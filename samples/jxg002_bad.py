"""JXG002 bad: a linear cumulative-sum primitive whose transpose applies the cumsum again instead of its
transpose (a reversed cumsum). Forward and reverse mode silently disagree: jacrev gives A, jacfwd gives A^T.
"""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"cumsum_p": {"args": ["f32[4]"]}}

cumsum_p = Primitive("lin_cumsum")


def _cumsum_impl(x):
    return jnp.cumsum(x, axis=-1)


def _cumsum_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _cumsum_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    return cumsum_p.bind(jnp.moveaxis(x, bx, 0)), 0  # the cumsum runs over the last axis, never the batch


def _cumsum_transpose(ct, x):  # jaxdiag-expect: JXG002
    return [cumsum_p.bind(ct)]


cumsum_p.def_impl(_cumsum_impl)
cumsum_p.def_abstract_eval(_cumsum_abstract_eval)
mlir.register_lowering(cumsum_p, mlir.lower_fun(_cumsum_impl, multiple_results=False))
batching.primitive_batchers[cumsum_p] = _cumsum_batching
ad.deflinear2(cumsum_p, _cumsum_transpose)
