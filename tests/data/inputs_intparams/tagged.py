"""A primitive whose bind param `name` (a tag) reaches it only from its public wrapper's `name: str` parameter: no
call of the package passes a literal. Its batching rule returns its output with the batch axis moved to the end but
says axis 0."""

import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_tag_p = Primitive("intparams_tag")


def _impl(x, *, name):
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    return x * 1.0


_tag_p.def_impl(_impl)
_tag_p.def_abstract_eval(lambda x, *, name: x)
mlir.register_lowering(_tag_p, mlir.lower_fun(_impl, multiple_results=False))
ad.deflinear2(_tag_p, lambda ct, x, *, name: [_tag_p.bind(ct, name=name)])


def _batching(batched_args, batch_dims, *, name):
    (x,), (d,) = batched_args, batch_dims
    return _tag_p.bind(jnp.moveaxis(x, d, -1), name=name), 0


batching.primitive_batchers[_tag_p] = _batching


def tag(value: jnp.ndarray, name: str) -> jnp.ndarray:
    """`value` unchanged, tagged `name` for a later capture."""
    return _tag_p.bind(value, name=name)
