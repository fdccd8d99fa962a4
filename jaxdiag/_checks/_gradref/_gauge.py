"""Outputs defined only up to a gauge: eigenvectors and singular vectors.

`jnp.linalg.eig` of a general matrix (and `eigh` of a complex Hermitian one) returns each eigenvector up to a complex
factor: LAPACK picks its norm and its phase. `jnp.linalg.svd` of a complex matrix returns each pair of singular
vectors up to a phase (`U_j e^{i phi}` with `e^{-i phi} Vh_j`). A custom derivative may pick another gauge (the
textbook eig formula keeps `diag(V^-1 dV) = 0`), and both are right for every loss that does not depend on that
choice, which is every loss with a meaning. Finite differences of the primal follow LAPACK's choice, so a cotangent
with a component along a gauge direction compares two gauges, not two derivatives.

The grad checks therefore draw their cotangents blind to every gauge direction (under JAX's bilinear pairing
`Re(sum(w * t))`), and the tangents compared for a custom JVP (the rule's and the finite differences') lose their
parts along them (`GradState.comparable`). A wrong eigenvalue term or a wrong coupling between vectors is still seen.
A float64 evaluation is the same function as the native one when its vectors differ only in phase, and its finite
differences are brought into the native phases (`Gauges.in_native_phase`: LAPACK's float64 signs differ).

Read from values alone: a complex square output `V` beside an output `w` with `A V = V diag(w)` for a square argument
`A` (eig, complex eigh), or complex outputs `U`, `s`, `Vh` with `A = U diag(s) Vh` (svd, batched too). The gauge
directions of distinct vectors have disjoint supports, so each is projected out on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Relative residual of the decomposition that still reads as one, by the precision of the vectors.
_RESIDUAL = {np.dtype(np.complex64): 1e-4, np.dtype(np.complex128): 1e-9}
COLUMNS, ROWS = -2, -1  # the axis summed over to read one vector: eigenvectors and U are columns, Vh rows


@dataclass
class Gauges:
    """The gauge directions of a subject's outputs: each a dict output index -> a complex array of that output's
    shape (zero off one vector), and the outputs whose vectors carry a phase, by the axis that reads one vector."""

    directions: list[dict[int, np.ndarray]] = field(default_factory=list)
    vectors: dict[int, tuple[np.ndarray, int]] = field(default_factory=dict)

    def blind(self, cotangents: list[Any]) -> list[Any]:
        """Cotangents (complex arrays, None for outputs not drawn) pairing to zero with every gauge direction, each
        output's on its own: the checks probe one output at a time (the others' cotangents zero), so a direction
        spanning two outputs (a pair of singular vectors' shared phase) is removed from each. That also leaves
        uncompared a rule that breaks the pair's coupling; no false finding is worth that check."""
        out = list(cotangents)
        for g in self.directions:
            for k, d in g.items():
                if out[k] is not None:
                    out[k] = out[k] - float(np.real(np.sum(out[k] * d))) / float(np.sum(np.abs(d) ** 2)) * np.conj(d)
        return out

    def tangent_free(self, tangents: list[Any]) -> list[Any]:
        """Tangents (float64/complex128 on the gauged outputs) less their parts along every gauge direction (in the
        real inner product)."""
        out = list(tangents)
        for g in self.directions:
            if any(out[k] is None for k in g):
                continue
            size = sum(float(np.sum(np.abs(d) ** 2)) for d in g.values())
            c = float(np.real(sum(np.sum(np.conj(d) * out[k]) for k, d in g.items()))) / size
            for k, d in g.items():
                out[k] = out[k] - c * d
        return out

    def in_native_phase(self, k: int, values: np.ndarray, change: np.ndarray | None = None) -> np.ndarray:
        """`change` (default: `values` itself) with each vector scaled by the complex factor that brings `values`
        closest to the native evaluation's vectors of output k: another evaluation of the decomposition (float64
        LAPACK) may pick other phases for the same vectors, and its finite differences follow its phases."""
        if k not in self.vectors:
            return values if change is None else change
        native, axis = self.vectors[k]
        factor = np.sum(np.conj(values) * native, axis=axis, keepdims=True) / np.maximum(
            np.sum(np.abs(values) ** 2, axis=axis, keepdims=True), np.finfo(np.float64).tiny)
        return (values if change is None else change) * factor


def gauges(args: Sequence[Any], outputs: Sequence[Any]) -> Gauges:
    """The gauges of `outputs` given the subject's arguments `args` (empty when no output is a decomposition's)."""
    found = Gauges()
    if not any(np.dtype(getattr(x, "dtype", np.float64)) in _RESIDUAL and np.ndim(x) >= 2 for x in outputs):
        return found  # no complex matrix among the outputs: nothing read, nothing converted (every grad subject asks)
    matrices = [np.asarray(a, dtype=np.complex128) for a in args if len(np.shape(a)) >= 2]
    if not matrices:
        return found
    values = [np.asarray(x) for x in outputs]
    for k, leaf in enumerate(values):
        if leaf.dtype not in _RESIDUAL or leaf.ndim < 2:
            continue
        if _is_eig(matrices, values, k):
            _add_eig(found, k, leaf.astype(np.complex128))
        elif (pair := _svd_pair(matrices, values, k)) is not None:
            _add_svd(found, k, pair, leaf.astype(np.complex128), values[pair].astype(np.complex128))
    return found


def _is_eig(matrices: list[np.ndarray], values: list[np.ndarray], k: int) -> bool:
    vectors = values[k].astype(np.complex128)
    if vectors.shape[-1] != vectors.shape[-2] or vectors.shape[-1] < 2:
        return False
    eigenvalues = [v.astype(np.complex128) for j, v in enumerate(values) if j != k and v.shape == vectors.shape[:-1]]
    return any(_close(a @ vectors, vectors * w[..., None, :], a, vectors, values[k].dtype)
               for a in matrices if a.shape == vectors.shape for w in eigenvalues)


def _svd_pair(matrices: list[np.ndarray], values: list[np.ndarray], k: int) -> int | None:
    """The index of the `Vh` output when output k is the `U` of an SVD of an argument, with `s` another output."""
    u = values[k].astype(np.complex128)
    for j, vh in enumerate(values):
        if j == k or vh.dtype not in _RESIDUAL or vh.ndim != u.ndim or vh.shape[-2] != u.shape[-1]:
            continue
        for s in values:
            if s.shape != u.shape[:-2] + (u.shape[-1],) or np.iscomplexobj(s):
                continue
            product = (u * s[..., None, :]) @ vh.astype(np.complex128)
            if any(a.shape == product.shape and _close(a, product, a, u, values[k].dtype) for a in matrices):
                return j
    return None


def _close(x: np.ndarray, y: np.ndarray, a: np.ndarray, vectors: np.ndarray, dtype: np.dtype) -> bool:
    residual = x - y
    scale = (1.0 + np.max(np.abs(a))) * (1.0 + np.max(np.abs(vectors)))
    return bool(np.all(np.isfinite(residual))) and float(np.max(np.abs(residual))) <= _RESIDUAL[dtype] * scale


def _add_eig(found: Gauges, k: int, vectors: np.ndarray) -> None:
    """Each eigenvector's norm and phase: `V_j` and `i V_j`, in column j."""
    found.vectors[k] = (vectors, COLUMNS)
    for index in np.ndindex(*vectors.shape[:-2], vectors.shape[-1]):
        column = np.zeros_like(vectors)
        column[index[:-1] + (slice(None), index[-1])] = vectors[index[:-1] + (slice(None), index[-1])]
        found.directions += [{k: column}, {k: 1j * column}]


def _add_svd(found: Gauges, k: int, j: int, u: np.ndarray, vh: np.ndarray) -> None:
    """Each pair of singular vectors' shared phase: `i U_j` in column j of U with `-i Vh_j` in row j of Vh."""
    found.vectors[k], found.vectors[j] = (u, COLUMNS), (vh, ROWS)
    for index in np.ndindex(*u.shape[:-2], u.shape[-1]):
        batch, n = index[:-1], index[-1]
        du, dvh = np.zeros_like(u), np.zeros_like(vh)
        du[batch + (slice(None), n)] = 1j * u[batch + (slice(None), n)]
        dvh[batch + (n, slice(None))] = -1j * vh[batch + (n, slice(None))]
        found.directions.append({k: du, j: dvh})
