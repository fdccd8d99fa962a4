"""A mechanics package's spectral rule: its parameter's type, `SymmetricTensor`, states that the values are symmetric,
and the JVP (the derivative of the closed form along the tangent's symmetric part) holds for symmetric tensors only.
Drawn from the annotation, the inputs and their tangents are symmetric and the rule is right; the same rule annotated
with a plain type is checked on a general matrix, where it is wrong."""

from __future__ import annotations

import jax
import jax.numpy as jnp


class SymmetricTensor:
    """The package's type for symmetric second-order tensors."""


class Tensor:
    """The package's type for general second-order tensors."""


def _check_plane(a):
    if a.shape[-2:] != (2, 2):
        raise ValueError(f"an in-plane tensor has shape (2, 2), got {a.shape}")


def _eigenvalues(a):
    _check_plane(a)
    mean = jnp.trace(a, axis1=-2, axis2=-1) / 2
    radius = jnp.sqrt(jnp.maximum(mean**2 - jnp.linalg.det(a), 0.0))
    return jnp.stack([mean - radius, mean + radius], axis=-1)


def _closed_form_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    half, shear = (a[..., 0, 0] - a[..., 1, 1]) / 2, a[..., 1, 0]
    radius = jnp.sqrt(half**2 + shear**2)
    dmean = (da[..., 0, 0] + da[..., 1, 1]) / 2
    dshear = (da[..., 1, 0] + da[..., 0, 1]) / 2  # the tangent of a symmetric tensor is symmetric
    dradius = (half * (da[..., 0, 0] - da[..., 1, 1]) / 2 + shear * dshear) / radius
    return _eigenvalues(a), jnp.stack([dmean - dradius, dmean + dradius], axis=-1)


@jax.custom_jvp
def principal_values(sig: SymmetricTensor):
    """Principal values of an in-plane stress.

    Args:
        sig: the stress, shape (2, 2).
    """
    return _eigenvalues(sig)


principal_values.defjvp(_closed_form_jvp)


@jax.custom_jvp
def principal_values_general(sig: Tensor):
    """Principal values of an in-plane stress.

    Args:
        sig: the stress, shape (2, 2).
    """
    return _eigenvalues(sig)


principal_values_general.defjvp(_closed_form_jvp)
