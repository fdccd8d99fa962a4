"""Outputs defined only up to a gauge: eigenvectors.

`jnp.linalg.eig` of a general matrix (and `eigh` of a complex Hermitian one) returns each eigenvector up to a complex
factor: LAPACK picks its norm and its phase. A custom derivative may pick another (the textbook formula for a
general matrix keeps `diag(V^-1 dV) = 0`), and both are right for every loss that does not depend on that choice,
which is every loss with a meaning. Finite differences of the primal follow LAPACK's choice, so a cotangent with a
component along an eigenvector compares two gauges, not two derivatives. The grad checks draw their cotangents on an
eigenvector output blind to each eigenvector's gauge (under JAX's bilinear pairing): the comparison then sees only
what every gauge agrees on, and a wrong eigenvalue term or a wrong coupling between eigenvectors is still seen. The
tangents compared for a custom JVP (the rule's and the finite differences') lose their parts along each eigenvector
the same way (`GradState.gauge_free`). A float64 evaluation is the same function as the native one when its
eigenvectors differ only in phase (`in_gauge_of`), and its finite differences are brought into the native phases.

An output is read as eigenvectors from the values alone: a complex square output `V` beside an output `w` of one
dimension less and a square argument `A` with `A V = V diag(w)` to rounding (batched over leading axes too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

# Relative residual of `A V - V diag(w)` that still reads as an eigendecomposition, by the precision of V.
_RESIDUAL = {np.dtype(np.complex64): 1e-4, np.dtype(np.complex128): 1e-9}


def eigenvector_outputs(args: Sequence[Any], outputs: Sequence[Any]) -> dict[int, np.ndarray]:
    """{output index: its value} for each output that holds the eigenvectors of a square argument, with the
    eigenvalues another output."""
    found: dict[int, np.ndarray] = {}
    squares = [np.asarray(a, dtype=np.complex128) for a in args if _square(a)]
    for k, leaf in enumerate(outputs):
        dtype = np.dtype(getattr(leaf, "dtype", np.float64))
        if dtype not in _RESIDUAL or not _square(leaf):
            continue
        vectors = np.asarray(leaf, dtype=np.complex128)
        values = [np.asarray(w, dtype=np.complex128) for j, w in enumerate(outputs)
                  if j != k and np.shape(w) == vectors.shape[:-1]]
        if any(_decomposes(a, vectors, w, _RESIDUAL[dtype]) for a in squares if a.shape == vectors.shape
               for w in values):
            found[k] = vectors
    return found


def _square(x: Any) -> bool:
    shape = np.shape(x)
    return len(shape) >= 2 and shape[-1] == shape[-2] and shape[-1] > 1


def _decomposes(a: np.ndarray, vectors: np.ndarray, values: np.ndarray, tolerance: float) -> bool:
    residual = a @ vectors - vectors * values[..., None, :]
    scale = (1.0 + np.max(np.abs(a))) * (1.0 + np.max(np.abs(vectors)))
    return bool(np.all(np.isfinite(residual))) and float(np.max(np.abs(residual))) <= tolerance * scale


def without_gauge(cotangent: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """`cotangent` blind to every gauge change: `sum_i w_ij V_ij = 0` for each column j, so that under JAX's bilinear
    pairing `Re(sum(w * t))` (`_values.dot`) it pairs to zero with `t = V_j c` for every complex `c`."""
    along = np.sum(vectors * cotangent, axis=-2, keepdims=True) / np.sum(np.abs(vectors) ** 2, axis=-2, keepdims=True)
    return cotangent - np.conj(vectors) * along


def tangent_without_gauge(tangent: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """`tangent` less its part along each eigenvector (`V_j c` with `c = V_j^H t_j / |V_j|^2`): what a change of
    gauge adds to an eigenvector's tangent, and what two right derivatives may differ by."""
    along = np.sum(np.conj(vectors) * tangent, axis=-2, keepdims=True) / np.sum(
        np.abs(vectors) ** 2, axis=-2, keepdims=True)
    return tangent - vectors * along


def gauge_factor(vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Per column, the complex factor that brings `vectors` closest to `reference` (shape `(..., 1, n)`): two
    evaluations of eig (float32 and float64 LAPACK) may pick different phases, a sign for real eigenvectors, for the
    same vectors, and the finite differences of the one follow its phases."""
    return np.sum(np.conj(vectors) * reference, axis=-2, keepdims=True) / np.maximum(
        np.sum(np.abs(vectors) ** 2, axis=-2, keepdims=True), np.finfo(np.float64).tiny)


def in_gauge_of(vectors: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """`vectors` with each column in the phase of the same column of `reference`."""
    return vectors * gauge_factor(vectors, reference)
