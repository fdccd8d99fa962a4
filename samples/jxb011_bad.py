"""JXB011 bad: the wrapper returns `prim.bind(x)` directly. A multiple_results primitive's bind returns a list, so
`jax.vmap(standardize, out_axes=(0, None))` fails with `vmap out_axes specification must be a tree prefix of the
corresponding value`: a tuple is not a prefix of a list (seed 1)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"standardize_p": {"args": ["f32[3]"]}}

standardize_p = Primitive("standardize")
standardize_p.multiple_results = True


def standardize(x):
    return standardize_p.bind(x)  # jaxdiag-expect: JXB011


def _standardize_impl(x):
    return (x - jnp.mean(x)) / jnp.std(x), jnp.ones((), x.dtype)


def _standardize_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype), ShapedArray((), x.dtype)


def _standardize_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    z = (x - jnp.mean(x, axis=1, keepdims=True)) / jnp.std(x, axis=1, keepdims=True)
    return (z, jnp.ones((), x.dtype)), (0, None)


standardize_p.def_impl(_standardize_impl)
standardize_p.def_abstract_eval(_standardize_abstract_eval)
batching.primitive_batchers[standardize_p] = _standardize_batching
mlir.register_lowering(standardize_p, mlir.lower_fun(_standardize_impl, multiple_results=True))
