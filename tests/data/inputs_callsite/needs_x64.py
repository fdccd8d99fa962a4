"""A library that refuses to run without x64: its public function asks for it, and its rule takes float64 values and
an int64 seed that inference (float32 draws) cannot give it. Reached where the public function calls it, under x64.
The JVP's chain-rule factor is twice the derivative."""

import jax
import jax.numpy as jnp


def _require_x64():
    if not jax.config.jax_enable_x64:
        raise RuntimeError('this library requires 64-bit mode: jax.config.update("jax_enable_x64", True)')


@jax.custom_jvp
def _scaled_sin(x, seed):
    if x.dtype != jnp.dtype("float64") or seed.dtype != jnp.dtype("int64"):
        raise TypeError(f"_scaled_sin takes the values and seed apply() prepares, got {x.dtype} and {seed.dtype}")
    return jnp.sin(x) * (seed % 3 + 1)


@_scaled_sin.defjvp
def _scaled_sin_jvp(primals, tangents):
    x, seed = primals
    t, _ = tangents
    return _scaled_sin(x, seed), 2.0 * jnp.cos(x) * (seed % 3 + 1) * t


def apply(x, seed):
    """`x`: values; `seed`: an integer."""
    _require_x64()
    return _scaled_sin(jnp.asarray(x, jnp.float64), jnp.asarray(seed, jnp.int64))
