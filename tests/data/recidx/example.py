"""The program `jaxdiag record` runs: data rows 1..2 of a 3-row table, eagerly and inside jax.jit."""

import jax
import jax.numpy as jnp

from recidx.rows import take_rows_jit_p, take_rows_p

table = jnp.arange(12.0).reshape(3, 4)
rows = jnp.array([2, 1, 1, 2], dtype=jnp.int32)
print(take_rows_p.bind(table, rows))
print(jax.jit(take_rows_jit_p.bind)(table, rows))
