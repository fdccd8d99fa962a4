"""An index batching rule wrong only for out-of-range indices: the impl reads with `dynamic_index_in_dim`, which
wraps a negative index once and clamps the rest into [0, len(x) - 1]; the batching rule wraps negatives the same
way but gathers with `mode="fill"`, so an index >= len(x) reads 0 instead of the last element. Every in-range index
agrees with the loop, so random small integers never showed it: index inputs are also drawn at len(x), len(x) + 1,
-1 and -(len(x) + 1). Only those values show it, so it is a warning naming them (JXB016): declaring the index's
range (`i32[]@0..7`) states that callers never pass them."""

import jax.numpy as jnp
from jax import lax
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"pick_p": {"args": ["f32[8]", "i32[]"]}}

pick_p = Primitive("pick")


def _pick_impl(x, i):
    return lax.dynamic_index_in_dim(x, i, keepdims=False)


def _pick_abstract_eval(x, i):
    return ShapedArray((), x.dtype)


def _pick_batching(batched_args, batch_dims):  # jaxdiag-expect: JXB016
    x, i = batched_args
    bx, bi = batch_dims
    size = x.shape[bx] if bx is not None else i.shape[bi]
    x = batching.bdim_at_front(x, bx, size)
    i = batching.bdim_at_front(i, bi, size)
    i = jnp.where(i < 0, i + x.shape[1], i)
    return jnp.take_along_axis(x, i[:, None], axis=1, mode="fill", fill_value=0.0)[:, 0], 0


pick_p.def_impl(_pick_impl)
pick_p.def_abstract_eval(_pick_abstract_eval)
batching.primitive_batchers[pick_p] = _pick_batching
mlir.register_lowering(pick_p, mlir.lower_fun(_pick_impl, multiple_results=False))
