"""JXB008 bad: a single-result primitive's rule returns `([out], [dim])`, the multiple_results form. JAX fails
with `TypeError: Argument '[Array(...)]' of type <class 'list'> is not a valid JAX type`."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"log_softmax_p": {"args": ["f32[4,3]"]}}

log_softmax_p = Primitive("log_softmax")


def _log_softmax_impl(x):
    return x - jnp.log(jnp.sum(jnp.exp(x), axis=-1, keepdims=True))


def _log_softmax_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _log_softmax_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    return [log_softmax_p.bind(x)], [0]  # jaxdiag-expect: JXB008


log_softmax_p.def_impl(_log_softmax_impl)
log_softmax_p.def_abstract_eval(_log_softmax_abstract_eval)
batching.primitive_batchers[log_softmax_p] = _log_softmax_batching
mlir.register_lowering(log_softmax_p, mlir.lower_fun(_log_softmax_impl, multiple_results=False))
