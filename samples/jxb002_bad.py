"""JXB002 bad: the rule returns the whole `batch_dims` tuple as the output's dim. JAX checks `type(d) is int` and
fails with `Exception: batch dim should be int or None`, without naming the primitive (seen in
cusp-ai-oss/kUPS#247)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"softsign_p": {"args": ["f32[4,3]"]}}

softsign_p = Primitive("softsign")


def _softsign_impl(x):
    return x / (1.0 + jnp.abs(x))


def _softsign_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


def _softsign_batching(batched_args, batch_dims):
    (x,) = batched_args
    return softsign_p.bind(x), batch_dims  # jaxdiag-expect: JXB002


softsign_p.def_impl(_softsign_impl)
softsign_p.def_abstract_eval(_softsign_abstract_eval)
batching.primitive_batchers[softsign_p] = _softsign_batching
mlir.register_lowering(softsign_p, mlir.lower_fun(_softsign_impl, multiple_results=False))
