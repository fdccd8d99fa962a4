"""Tutorial-style: the rule keeps the batch axis, but `swapaxes` moves it to the end; the rule still returns 0."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"running_p": {"args": ["f32[3]"]}}

running_p = Primitive("running")


def _running_impl(x):
    return jnp.cumsum(x)


def _running_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _running_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    out = jnp.swapaxes(jnp.cumsum(x, axis=1), 0, 1)
    return out, 0  # jaxdiag-expect: JXB004 dim 1


running_p.def_impl(_running_impl)
running_p.def_abstract_eval(_running_abstract_eval)
batching.primitive_batchers[running_p] = _running_batching
mlir.register_lowering(running_p, mlir.lower_fun(_running_impl, multiple_results=False))
