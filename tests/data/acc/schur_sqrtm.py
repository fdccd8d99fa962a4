"""A Gaussian refinement as multi-grid field libraries compute it: the public function slices an undocumented
covariance `cov` and hands the Schur complement of its leading block to a matrix square root, and the leading block
to a solve, both custom_jvps whose code calls `eigh` (so symmetric matrices, moved along symmetric steps, are their
contract). Inferred, `cov` is a random square matrix: the complement is not symmetric, and with `n` the whole size the
leading block is empty. Both rules are checked on their own spd draws instead (before: the right root got a JXG024,
the solve a check of 0x0 arrays). `refine_doubled` calls a root whose JVP doubles its tangent: still JXG024."""

import jax
import jax.numpy as jnp


def _root(m):
    w, v = jnp.linalg.eigh(m)
    return (v * jnp.sqrt(jnp.maximum(w, 0.0))) @ v.T


@jax.custom_jvp
def sqrtm(m):
    return _root(m)


@sqrtm.defjvp
def _sqrtm_jvp(primals, tangents):
    (m,), (dm,) = primals, tangents
    w, v = jnp.linalg.eigh(m)
    root = jnp.sqrt(jnp.maximum(w, 0.0))
    inner = (v.T @ dm @ v) / (root[:, None] + root[None, :])  # X dX + dX X = dM in X's eigenbasis
    return _root(m), v @ inner @ v.T


@jax.custom_jvp
def sqrtm_doubled(m):
    return _root(m)


@sqrtm_doubled.defjvp
def _sqrtm_doubled_jvp(primals, tangents):
    (m,), (dm,) = primals, tangents
    w, v = jnp.linalg.eigh(m)
    root = jnp.sqrt(jnp.maximum(w, 0.0))
    inner = (v.T @ dm @ v) / (root[:, None] + root[None, :])
    return _root(m), 2.0 * (v @ inner @ v.T)  # JXG024


@jax.custom_jvp
def solve(a, x):
    w, u = jnp.linalg.eigh(a)
    return u @ ((u.T @ x) / w[:, None])


@solve.defjvp
def _solve_jvp(primals, tangents):
    (a, x), (da, dx) = primals, tangents
    out = solve(a, x)
    return out, solve(a, dx - da @ out)


def refine(cov, n: int):
    fine, cross, coarse = cov[-n:, -n:], cov[-n:, :-n], cov[:-n, :-n]
    gain = solve(coarse, cross.T)
    return gain.T, sqrtm(fine - cross @ gain)


def refine_doubled(cov, n: int):
    fine, cross, coarse = cov[-n:, -n:], cov[-n:, :-n], cov[:-n, :-n]
    return sqrtm_doubled(fine - cross @ solve(coarse, cross.T))
