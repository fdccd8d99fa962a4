"""JXB001 bad: the rule reduces every axis but the batch one, so the result's batch axis is always 0, yet it returns
the input's dim. Right for in_axes=0; with in_axes=1 the dim is out of range for the rank-1 result and vmap dies
with `IndexError: tuple index out of range` inside JAX."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"norm_p": {"args": ["f32[3]"]}}

norm_p = Primitive("norm")


def _norm_impl(x):
    return jnp.sqrt(jnp.sum(x * x))


def _norm_abstract_eval(x):
    return ShapedArray((), x.dtype)


def _norm_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    axes = tuple(i for i in range(x.ndim) if i != bx)
    return jnp.sqrt(jnp.sum(x * x, axis=axes)), bx  # jaxdiag-expect: JXB001


norm_p.def_impl(_norm_impl)
norm_p.def_abstract_eval(_norm_abstract_eval)
batching.primitive_batchers[norm_p] = _norm_batching
mlir.register_lowering(norm_p, mlir.lower_fun(_norm_impl, multiple_results=False))
