"""JXV001 bad: `out_batched` must have exactly the output's pytree structure. The rule returns a list `[True]`
for a single array output, so JAX fails with `ValueError: structure of output value and output batching
specification returned by custom vmap rule (row_norm_vmap) do not match`."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap

JAXDIAG = {"row_norm": {"args": ["f32[3]"]}}


@custom_vmap
def row_norm(x):
    return jnp.sqrt(jnp.sum(x * x))


@row_norm.def_vmap
def row_norm_vmap(axis_size, in_batched, x):  # jaxdiag-expect: JXV001
    (x_batched,) = in_batched
    return jnp.sqrt(jnp.sum(x * x, axis=-1)), [x_batched]  # a list around the flag: structure [*], not *
