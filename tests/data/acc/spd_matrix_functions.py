"""Matrix functions of symmetric positive-definite matrices with Daleckii-Krein JVPs, as a geometry package writes
them: what they take is said only by their names and summary lines ("SPD square root"), never in a parameter's
entry. On a general matrix `eigh` reads one triangle and the divided differences blow up, so the rules give huge or
infinite tangents there; on SPD matrices with symmetric tangents they are right."""

import jax
import jax.numpy as jnp


def _eigh_sym(P):  # the factorisation behind a helper, as such packages share it
    return jnp.linalg.eigh(0.5 * (P + jnp.swapaxes(P, -1, -2)))


def _from_eigh(vecs, vals):
    return (vecs * vals[..., None, :]) @ jnp.swapaxes(vecs, -1, -2)


def _root(P):
    vals, vecs = _eigh_sym(P)
    return _from_eigh(vecs, jnp.sqrt(jnp.maximum(vals, 1e-30)))


def _root_and_tangent(P, E):  # Daleckii-Krein: the tangent's entries over the sums of the roots
    vals, vecs = _eigh_sym(P)
    roots = jnp.sqrt(jnp.maximum(vals, 1e-30))
    rotated = jnp.swapaxes(vecs, -1, -2) @ (0.5 * (E + jnp.swapaxes(E, -1, -2))) @ vecs
    inner = rotated / (roots[..., :, None] + roots[..., None, :])
    return _from_eigh(vecs, roots), vecs @ inner @ jnp.swapaxes(vecs, -1, -2)


@jax.custom_jvp
def spd_sqrtm(P):
    """Principal SPD square root, differentiated without differentiating eigenvectors."""
    return _root(P)


@spd_sqrtm.defjvp
def _spd_sqrtm_jvp(primals, tangents):
    return _root_and_tangent(primals[0], tangents[0])


@jax.custom_jvp
def _psd_log_differentiable(P):
    vals, vecs = _eigh_sym(P)
    return _from_eigh(vecs, jnp.log(jnp.maximum(vals, 1e-30)))


@_psd_log_differentiable.defjvp
def _psd_log_jvp(primals, tangents):
    (P,), (E,) = primals, tangents
    vals, vecs = _eigh_sym(P)
    vals = jnp.maximum(vals, 1e-30)
    logs = jnp.log(vals)
    rotated = jnp.swapaxes(vecs, -1, -2) @ (0.5 * (E + jnp.swapaxes(E, -1, -2))) @ vecs
    diff = vals[..., :, None] - vals[..., None, :]
    same = jnp.abs(diff) < 1e-12
    quotient = jnp.where(same, 1.0 / vals[..., :, None], (logs[..., :, None] - logs[..., None, :]) /
                         jnp.where(same, 1.0, diff))
    return _from_eigh(vecs, logs), vecs @ (rotated * quotient) @ jnp.swapaxes(vecs, -1, -2)


# The same square root under a name and a summary that say nothing of its input: checked on general matrices.
@jax.custom_jvp
def matrix_root(P):
    """Principal square root, differentiated without differentiating eigenvectors."""
    return _root(P)


@matrix_root.defjvp
def _matrix_root_jvp(primals, tangents):
    return _root_and_tangent(primals[0], tangents[0])
