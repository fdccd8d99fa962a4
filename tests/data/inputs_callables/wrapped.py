"""A decorator factory: `wrap_numpy(fn)` returns a function that calls `jax.pure_callback` on the user's NumPy
function. The callback sits inside the function the factory returns; no module attribute holds it, and inference
never calls what the factory returns. Its `vmap_method` is missing: `jax.vmap` of the wrapped function raises."""

from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np


def wrap_numpy(fn: Callable[..., np.ndarray], batched: bool = False) -> Callable:
    def _host(*args):
        return np.asarray(fn(*[np.asarray(a) for a in args]), dtype=np.float32)

    def _wrapped(*args):
        out = jax.ShapeDtypeStruct((), jnp.float32)
        if batched:
            return jax.pure_callback(_host, out, *args, vmap_method="broadcast_all")
        return jax.pure_callback(_host, out, *args)

    return _wrapped
