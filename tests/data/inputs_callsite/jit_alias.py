"""A rule whose public caller reaches it only through a module-level alias (`_apply = jax.jit(_series,
static_argnums=0)`; `series` calls `_apply`). Its order `n` is a Python int (`range(n)`): inference's float draws
cannot run the rule on its own, so it is checked where `series` calls it. The JVP doubles the derivative."""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _series(n, z):
    out = jnp.zeros_like(z)
    for k in range(1, n + 1):
        out = out + z**k / k
    return out


@_series.defjvp
def _series_jvp(n, primals, tangents):
    (z,), (t,) = primals, tangents
    derivative = sum(z ** (k - 1) for k in range(1, n + 1))
    return _series(n, z), 2.0 * derivative * t


_apply = jax.jit(_series, static_argnums=0)


def series(n: int, z):
    """The first `n` terms of -log(1 - z)."""
    return _apply(n, z)
