"""A pure_callback without a vmap_method whose operands are unbatched at the call site: it reads a fixed table, and
the batched input only meets its result afterwards. `jax.vmap` never batches the callback, so it never needs a
vmap_method and vmap matches the per-example loop: no JXB020 (proven by running vmap, not read from the
declaration)."""

import jax
import jax.numpy as jnp
import numpy as np

JAXDIAG = {"scale_by_table": {"args": ["f32[4]"]}}

TABLE = np.linspace(0.5, 2.0, 4).astype(np.float32)


def _lookup(table):
    return np.sqrt(table).astype(table.dtype)


def scale_by_table(x):
    weights = jax.pure_callback(_lookup, jax.ShapeDtypeStruct(TABLE.shape, TABLE.dtype), jnp.asarray(TABLE))
    return x * weights
