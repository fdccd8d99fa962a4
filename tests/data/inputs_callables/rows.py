"""A public function taking a row-wise `f` and a required keyword-only `chunk_size` (no call of the package passes
a literal), that makes a custom_jvp at run time: its JVP rule drops the tangent of `x`'s second half."""

from functools import partial
from typing import Callable, Optional

import jax
import jax.numpy as jnp


def apply_rows(f: Callable, pars, x, *, chunk_size: Optional[int]):
    return _apply_local(f, chunk_size, pars, x)


def _apply_local(f, chunk_size, pars, x):
    impl = partial(_chunked, f, chunk_size)
    packed = jax.custom_jvp(impl)
    packed.defjvp(partial(_chunked_jvp, impl))
    return packed(pars, x)


def _chunked(f, chunk_size, pars, x):
    n = x.shape[0]
    size = max(1, min(chunk_size or n, n))
    parts = [f(pars, x[i:i + size]) for i in range(0, n, size)]
    return jnp.concatenate(parts)


def _chunked_jvp(impl, primals, tangents):
    pars, x = primals
    dp, dx = tangents
    half = x.shape[0] // 2
    dx = dx.at[half:].set(0.0)
    return jax.jvp(impl, (pars, x), (dp, dx))
