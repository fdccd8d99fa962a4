"""A spherical-harmonic synthesis as such packages write it: the coefficients of band limit `lmax` are packed in a
vector of (lmax + 1)(lmax + 2) / 2 entries, a size no shape ladder guesses, and the function says so when it gets
another: "coeffs shape (4,) != expected (15,) for lmax=4"."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np


def _packed_size(lmax: int) -> int:
    return (lmax + 1) * (lmax + 2) // 2


def _basis(lmax: int) -> np.ndarray:
    n = _packed_size(lmax)
    rings = np.linspace(0.1, 3.0, 2 * lmax + 1)
    return np.cos(np.outer(rings, np.arange(1, n + 1))).astype(np.float32)


def _check(coeffs, lmax):
    expected = (_packed_size(lmax),)
    if coeffs.shape != expected:
        raise ValueError(f"coeffs shape {coeffs.shape} != expected {expected} for lmax={lmax}")


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def synthesize(coeffs, lmax: int):
    _check(coeffs, lmax)
    return jnp.asarray(_basis(lmax)) @ coeffs


def _synthesize_fwd(coeffs, lmax):
    return synthesize(coeffs, lmax), None


def _synthesize_bwd(lmax, _, g):
    return (jnp.asarray(_basis(lmax)).T @ g,)


synthesize.defvjp(_synthesize_fwd, _synthesize_bwd)
