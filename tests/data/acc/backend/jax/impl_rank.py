"""A primitive whose impl takes one example or one batch of them (rank 1 or 2) and refuses any other rank with its
own message, the pattern of a distributed transpose written for 3-D arrays and one batch axis: its batching rule
binds the primitive on the batch, so one vmap works and a nested vmap hands the impl a rank it refuses. That is
the impl's stated contract, reached through the rule's bind: a note (JXN020), not the rule's accident (JXB006).
It lives in a folder named `jax`, as a library's JAX backend does (`mylib/_src/jax/`): still the user's code."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

reverse_p = Primitive("reverse_rows")


def _reverse_impl(x):
    if x.ndim == 1:
        return x[::-1]
    if x.ndim == 2:
        return x[:, ::-1]
    raise ValueError(f"Unsupported input shape {x.shape}: one example or one batch of them")


def _reverse_batching(args, dims):
    (x,), (d,) = args, dims
    return reverse_p.bind(jnp.moveaxis(x, d, 0)), 0


reverse_p.def_impl(_reverse_impl)
reverse_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
mlir.register_lowering(reverse_p, mlir.lower_fun(_reverse_impl, multiple_results=False))
batching.primitive_batchers[reverse_p] = _reverse_batching
