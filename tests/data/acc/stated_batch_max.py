"""custom_vmap rules returning one batch-wide value for every example. `shared_norm` says so in the comment that
opens it (a batch statistic by design); `pooled_norm` says nothing, and `scaled_norm` names vmap without a batch-wide
value: both are reported."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap


@custom_vmap
def shared_norm(x):
    # The norm of x, except under vmap: the largest norm of the batch, the
    # same for all of its elements (one step size for every example).
    return jnp.linalg.norm(x)


@shared_norm.def_vmap
def _shared_norm_rule(axis_size, in_batched, x):
    return jnp.max(jnp.linalg.norm(x, axis=-1)), False


@custom_vmap
def pooled_norm(x):
    return jnp.linalg.norm(x)


@pooled_norm.def_vmap
def _pooled_norm_rule(axis_size, in_batched, x):
    return jnp.max(jnp.linalg.norm(x, axis=-1)), False


# Works under vmap.
@custom_vmap
def scaled_norm(x):
    return jnp.linalg.norm(x)


@scaled_norm.def_vmap
def _scaled_norm_rule(axis_size, in_batched, x):
    return jnp.max(jnp.linalg.norm(x, axis=-1)), False
