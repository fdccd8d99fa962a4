"""A primitive whose first operand indexes a table of Python functions (the pattern of equinox's `noinline_p`).
The functions below pass it a constant index, so `vmap` of those functions never batches the index; the batching
rule refuses a batched index, as such a rule may. `pick` takes the index as an input: there vmap does batch it."""

import jax
import jax.numpy as jnp
from jax.interpreters import batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

TABLE = [lambda v: v * 2.0, jnp.sin]

table_call_p = Primitive("table_call")


def table_call_impl(index, x):
    return jax.lax.switch(index, TABLE, x)


def table_call_batch(args, dims):
    index, x = args
    index_dim, x_dim = dims
    if index_dim is not None:  # JAX marks an unbatched operand with None
        raise ValueError("table_call: the function index must not be batched")
    return table_call_p.bind(index, x), x_dim  # every table entry is elementwise


table_call_p.def_impl(table_call_impl)
table_call_p.def_abstract_eval(lambda index, x: jax.core.ShapedArray(x.shape, x.dtype))
batching.primitive_batchers[table_call_p] = table_call_batch
mlir.register_lowering(table_call_p, mlir.lower_fun(table_call_impl, multiple_results=False))


def double(x):
    return table_call_p.bind(jnp.asarray(0, jnp.int32), x)


def sine_twice(x):
    index = jnp.arange(2, dtype=jnp.int32)[1]  # computed, but from constants only
    return table_call_p.bind(index, table_call_p.bind(index, x))


def pick(index, x):
    return table_call_p.bind(index, x)
