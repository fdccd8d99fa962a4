"""A primitive whose impl is written with jax.numpy's functional updates (equinox's `maybe_set_p`): JAX hands the
impl whatever the caller bound, and callers bind jax Arrays, so `buffer.at[index].set(value)` works."""

import jax
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

set_at_p = Primitive("set_at")


def set_at_impl(buffer, value, index):
    return buffer.at[index].set(value)


def set_at_batch(args, dims):
    args = [jax.numpy.moveaxis(a, d, 0) if d is not None else a for a, d in zip(args, dims)]
    size = next(a.shape[0] for a, d in zip(args, dims) if d is not None)
    args = [a if d is not None else jax.numpy.broadcast_to(a, (size, *a.shape)) for a, d in zip(args, dims)]
    return jax.vmap(set_at_impl)(*args), 0


set_at_p.def_impl(set_at_impl)
set_at_p.def_abstract_eval(lambda buffer, value, index: jax.core.ShapedArray(buffer.shape, buffer.dtype))
mlir.register_lowering(set_at_p, mlir.lower_fun(set_at_impl, multiple_results=False))
batching.primitive_batchers[set_at_p] = set_at_batch


def set_at(buffer, value, index):
    return set_at_p.bind(buffer, value, index)
