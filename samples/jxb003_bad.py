"""JXB003 bad: the second output (the number of features) depends on no input, but the rule broadcasts it to the
batch and reports it batched. vmap works, materialises one copy per example, and
`jax.vmap(f, out_axes=[0, None])` fails with `got axis spec None but output was batched on axis 0`."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"l2_normalize_p": {"args": ["f32[3]"]}}

l2_normalize_p = Primitive("l2_normalize")
l2_normalize_p.multiple_results = True


def _l2_normalize_impl(x):
    return x / jnp.sqrt(jnp.sum(x * x)), jnp.asarray(x.shape[-1], x.dtype)


def _l2_normalize_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype), ShapedArray((), x.dtype)


def _l2_normalize_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    y = x / jnp.sqrt(jnp.sum(x * x, axis=-1, keepdims=True))
    n = jnp.broadcast_to(jnp.asarray(x.shape[-1], x.dtype), (x.shape[0],))
    return (y, n), (0, 0)  # jaxdiag-expect: JXB003


l2_normalize_p.def_impl(_l2_normalize_impl)
l2_normalize_p.def_abstract_eval(_l2_normalize_abstract_eval)
batching.primitive_batchers[l2_normalize_p] = _l2_normalize_batching
mlir.register_lowering(l2_normalize_p, mlir.lower_fun(_l2_normalize_impl, multiple_results=True))
