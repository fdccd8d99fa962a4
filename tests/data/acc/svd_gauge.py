"""Custom VJPs of a complex SVD that differentiate a phase-fixed decomposition (the first entry of each left singular
vector made real and positive): a gauge of their own. LAPACK's vectors differ from those by one phase per pair
(`U_j e^{i phi}` with `e^{-i phi} Vh_j`), held constant here, so the cotangents are carried across it; every loss
that does not depend on the phases gets JAX's gradient. `svd_doubled` doubles the singular values' term, which no
gauge explains."""

import jax
import jax.numpy as jnp


def _lapack(a):
    u, s, vh = jnp.linalg.svd(a, full_matrices=False)
    return u, s, vh


def _fixed(a):
    u, s, vh = _lapack(a)
    phase = u[0, :] / jnp.abs(u[0, :])
    return u * jnp.conj(phase)[None, :], s, phase[:, None] * vh


def _gradient(a, g, weight):
    u, _, _ = _lapack(a)
    phase = jax.lax.stop_gradient(u[0, :] / jnp.abs(u[0, :]))
    gu, gs, gvh = g
    _, pullback = jax.vjp(_fixed, a)
    return pullback((gu * phase[None, :], weight * gs, jnp.conj(phase)[:, None] * gvh))


@jax.custom_vjp
def svd(a):
    return _lapack(a)


def _svd_fwd(a):
    return _lapack(a), a


def _svd_bwd(a, g):
    return _gradient(a, g, 1.0)


svd.defvjp(_svd_fwd, _svd_bwd)


@jax.custom_vjp
def svd_doubled(a):
    return _lapack(a)


def _doubled_fwd(a):
    return _lapack(a), a


def _doubled_bwd(a, g):
    return _gradient(a, g, 2.0)


svd_doubled.defvjp(_doubled_fwd, _doubled_bwd)
