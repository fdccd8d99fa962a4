"""A host callback taking `float`-annotated scalars (as a special-function wrapper does) and no `vmap_method`:
`jax.vmap` of it raises. Its scalars run as drawn f32[] arrays (reverse mode does not: a callback has no JVP), so
they are checked as arrays, batched, and the missing vmap_method is found; passing them as Python floats instead
would hide it."""

import jax
import jax.numpy as jnp
import numpy as np


def coefficients(eigval: float, tau: float, K: int):
    shape = jax.ShapeDtypeStruct((K + 1,), jnp.float32)
    host = lambda e, t: (np.exp(-t * e) * np.arange(K + 1)).astype(np.float32)  # noqa: E731
    return jax.pure_callback(host, shape, eigval, tau)
