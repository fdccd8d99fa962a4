"""JXB010 bad: the rule computes the norm output over the whole batched array (one scalar, dim None), but each
example has its own norm. vmap broadcasts that one number to every example: all of them are silently wrong, and it
is not even an aggregate of their norms."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"normalize_p": {"args": ["f32[3]"]}}

normalize_p = Primitive("normalize")
normalize_p.multiple_results = True


def _normalize_impl(x):
    norm = jnp.linalg.norm(x)
    return x / norm, norm


def _normalize_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype), ShapedArray((), x.dtype)


def _normalize_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    x = jnp.moveaxis(x, bx, 0)
    norms = jnp.linalg.norm(x, axis=1, keepdims=True)
    return (x / norms, jnp.linalg.norm(x)), (0, None)  # jaxdiag-expect: JXB010


normalize_p.def_impl(_normalize_impl)
normalize_p.def_abstract_eval(_normalize_abstract_eval)
batching.primitive_batchers[normalize_p] = _normalize_batching
mlir.register_lowering(normalize_p, mlir.lower_fun(_normalize_impl, multiple_results=True))
