"""JXB006 bad: the rule assumes every operand is batched. When the weights are shared across the batch
(`in_axes=(0, None)`), `jnp.moveaxis(w, None, 0)` raises `TypeError` inside vmap (as in
enpasos/jax2onnx#115, jax#39451)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"matvec_p": {"args": ["f32[4,3]", "f32[3]"]}}

matvec_p = Primitive("matvec")


def _matvec_impl(a, v):
    return a @ v


def _matvec_abstract_eval(a, v):
    return ShapedArray(a.shape[:1], a.dtype)


def _matvec_batching(batched_args, batch_dims):
    a, v = batched_args
    ba, bv = batch_dims
    a = jnp.moveaxis(a, ba, 0)  # jaxdiag-expect: JXB006
    v = jnp.moveaxis(v, bv, 0)
    return jnp.einsum("bij,bj->bi", a, v), 0


matvec_p.def_impl(_matvec_impl)
matvec_p.def_abstract_eval(_matvec_abstract_eval)
batching.primitive_batchers[matvec_p] = _matvec_batching
mlir.register_lowering(matvec_p, mlir.lower_fun(_matvec_impl, multiple_results=False))
