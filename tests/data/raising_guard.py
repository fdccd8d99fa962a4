"""A runtime guard as equinox's `error_if` writes it: a custom_jvp (symbolic_zeros=True) whose primal raises from
a callback when its predicate holds. The function only ever passes `a > 10`, so plain JAX never raises; a
predicate drawn at random can hold, and then the primal itself fails, which says nothing about symbolic zeros."""

import jax
import jax.numpy as jnp
import numpy as np


def _raise_if(pred):
    if np.any(pred):
        raise RuntimeError("too big")
    return np.zeros((), np.float32)


@jax.custom_jvp
def guarded(x, y, pred):
    return x * y + jax.pure_callback(_raise_if, jax.ShapeDtypeStruct((), jnp.float32), pred)


def guarded_jvp(primals, tangents):
    x, y, pred = primals
    tx, ty, _ = tangents
    tx = jnp.zeros_like(x) if type(tx) is jax.custom_derivatives.SymbolicZero else tx
    ty = jnp.zeros_like(y) if type(ty) is jax.custom_derivatives.SymbolicZero else ty
    return guarded(x, y, pred), tx * y + x * ty


guarded.defjvp(guarded_jvp, symbolic_zeros=True)


def checked(a, b):
    return guarded(a, b, a > 10.0)
