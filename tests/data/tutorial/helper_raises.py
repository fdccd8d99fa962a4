"""Tutorial-style: the batching rule calls a broadcasting helper whose shape check fails when one argument is
unbatched; the defect is the rule's (it passes an unbatched argument), not the helper's."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"fma_p": {"args": ["f32[4]", "f32[4]", "f32[4]"]}}

fma_p = Primitive("fma")


def _fma_impl(x, y, z):
    return x * y + z


def _fma_abstract_eval(x, y, z):
    return ShapedArray(x.shape, x.dtype)


def _same_shapes(*arrays):
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1:
        raise ValueError(f"fma operands must have equal shapes, got {sorted(shapes)}")
    return arrays


def _fma_batch(batched_args, batch_dims):
    x, y, z = (jnp.moveaxis(a, d, 0) if d is not None else a for a, d in zip(batched_args, batch_dims))
    x, y, z = _same_shapes(x, y, z)  # jaxdiag-expect: JXB006
    return fma_p.bind(x, y, z), 0


fma_p.def_impl(_fma_impl)
fma_p.def_abstract_eval(_fma_abstract_eval)
batching.primitive_batchers[fma_p] = _fma_batch
mlir.register_lowering(fma_p, mlir.lower_fun(_fma_impl, multiple_results=False))
