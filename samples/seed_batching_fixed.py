"""Seed 1, done right: abstract eval and lowering registered, the reduced output's batch dim is where the rule
puts it (0), the constant output is unbatched (None), and the wrapper returns a tuple so out_axes=(0, None)
works."""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend import core
from jax.interpreters import batching, mlir

my_sum_p = core.Primitive('my_sum')
my_sum_p.multiple_results = True


def my_sum(x):
    return tuple(my_sum_p.bind(x))


def my_sum_impl(x):
    return jnp.sum(x), jnp.ones((3,), x.dtype)


def my_sum_abstract_eval(x):
    return (ShapedArray((), x.dtype), ShapedArray((3,), x.dtype))


def my_sum_batching_rule(batched_args, batch_dims):
    x, = batched_args
    bd_x, = batch_dims
    x = jnp.moveaxis(x, bd_x, 0)
    return (jnp.sum(x, axis=tuple(range(1, x.ndim))), jnp.ones((3,), x.dtype)), (0, None)


my_sum_p.def_impl(my_sum_impl)
my_sum_p.def_abstract_eval(my_sum_abstract_eval)
mlir.register_lowering(my_sum_p, mlir.lower_fun(my_sum_impl, multiple_results=True))
batching.primitive_batchers[my_sum_p] = my_sum_batching_rule
