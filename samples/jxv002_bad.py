"""JXV002 bad: the rule computes one total per example (shape (B,)) but declares it unbatched (`False`), as if a
"scalar" output could not be batched. JAX takes the (B,) array as one value and broadcasts it to every example:
vmap returns shape (B, B) instead of (B,), silently."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap

JAXDIAG = {"total": {"args": ["f32[3]"]}}


@custom_vmap
def total(x):
    return jnp.sum(x)


@total.def_vmap
def total_vmap(axis_size, in_batched, x):  # jaxdiag-expect: JXV002
    return jnp.sum(x, axis=-1), False  # one total per example: this output IS batched
