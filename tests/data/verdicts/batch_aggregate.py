"""custom_vmap rules that aggregate across the batch by design (`batch_max`: the largest entry of the whole batch,
declared unbatched; `batch_mean`: the batch mean broadcast to every example, declared batched), and one that
returns the first example's result for every example (`first_only`: a defect, never an aggregate)."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap


@custom_vmap
def batch_max(x):
    return jnp.max(x)


@batch_max.def_vmap
def batch_max_rule(axis_size, in_batched, x):
    return jnp.max(x), False


@custom_vmap
def batch_mean(x):
    return jnp.sum(x * x)


@batch_mean.def_vmap
def batch_mean_rule(axis_size, in_batched, x):
    per_example = jnp.sum(x * x, axis=-1) if in_batched[0] else jnp.full((axis_size,), jnp.sum(x * x))
    return jnp.broadcast_to(jnp.mean(per_example), (axis_size,)), True


@custom_vmap
def first_only(x):
    return jnp.sum(jnp.sin(x))


@first_only.def_vmap
def first_only_rule(axis_size, in_batched, x):
    first = x[0] if in_batched[0] else x
    return jnp.sum(jnp.sin(first)), False
