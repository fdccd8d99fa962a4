"""JXR006 bad: a primitive with impl, abstract eval, lowering and batching, but no JVP rule: jax.grad fails with
"Differentiation rule for 'softsign' not implemented"."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"softsign_p": {"args": ["f32[3]"]}}

softsign_p = Primitive("softsign")


def _softsign_impl(x):
    return x / (1.0 + jnp.abs(x))


def _softsign_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


softsign_p.def_impl(_softsign_impl)
softsign_p.def_abstract_eval(_softsign_abstract_eval)
mlir.register_lowering(softsign_p, mlir.lower_fun(_softsign_impl, multiple_results=False))
batching.defvectorized(softsign_p)
