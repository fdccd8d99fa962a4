"""JXV005 bad: the rule assumes every argument is batched. `vmap(dot, in_axes=(0, None))` hands it an unbatched
y of shape (3,), and the einsum fails with `ValueError: Einstein sum subscript 'bj' does not contain the correct
number of indices for operand 1`."""

import jax.numpy as jnp
from jax.custom_batching import custom_vmap

JAXDIAG = {"dot": {"args": ["f32[3]", "f32[3]"]}}


@custom_vmap
def dot(x, y):
    return jnp.dot(x, y)


@dot.def_vmap
def dot_vmap(axis_size, in_batched, x, y):  # jaxdiag-expect: JXV005
    return jnp.einsum("bj,bj->b", x, y), True  # ignores in_batched
