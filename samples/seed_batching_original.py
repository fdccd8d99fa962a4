"""Seed 1, the question as asked: a multi-output primitive whose batching rule gives the constant output the
input's batch dim. jaxdiag: JXB004 (ones has size 3 at dim 0, not the batch size) among others."""

import jax
import jax.numpy as jnp
from jax.extend import core
from jax.interpreters import batching

my_sum_p = core.Primitive('my_sum')  # jaxdiag-expect: JXR002, JXR004
my_sum_p.multiple_results = True


def my_sum(x):
    return my_sum_p.bind(x)


def my_sum_impl(x):
    return jnp.sum(x), jnp.ones((3,))


my_sum_p.def_impl(my_sum_impl)


def my_sum_batching_rule(batched_args, batch_dims):
    x, = batched_args
    bd_x, = batch_dims
    axis = tuple(i for i in range(x.ndim) if i != bd_x)
    return (jnp.sum(x, axis=axis), jnp.ones((3,))), (bd_x, bd_x)  # jaxdiag-expect: JXB001, JXB004


batching.primitive_batchers[my_sum_p] = my_sum_batching_rule
