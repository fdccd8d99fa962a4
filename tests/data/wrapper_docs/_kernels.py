"""The rules, written without documentation: their contract is stated by `api`, which calls them."""

import jax
import jax.numpy as jnp


def _solve_fwd(A, b):
    x = jnp.linalg.solve(A, b)
    return x, (A, x)


def _solve_bwd(res, g):
    A, x = res
    gb = jnp.linalg.solve(A, g)  # A is symmetric, so A^-T g is A^-1 g
    return -jnp.outer(gb, x), gb


def _solve_bwd_sign(res, g):
    A, x = res
    gb = jnp.linalg.solve(A, g)
    return jnp.outer(gb, x), gb  # the sign of A's cotangent lost: wrong on every matrix


@jax.custom_vjp
def spd_solve(A, b):
    return jnp.linalg.solve(A, b)


@jax.custom_vjp
def spd_solve_wrong(A, b):
    return jnp.linalg.solve(A, b)


spd_solve.defvjp(_solve_fwd, _solve_bwd)
spd_solve_wrong.defvjp(_solve_fwd, _solve_bwd_sign)


def _ridge_fwd(A, b, ridge):
    x = ridge_solve(A, b, ridge)
    return x, (A, x)


def _ridge_bwd(res, g):  # no cotangent for the ridge: the solution moves with it by parts in 10^4
    gA, gb = _solve_bwd(res, g)
    return gA, gb, None


@jax.custom_vjp
def ridge_solve(A, b, ridge):
    return jnp.linalg.solve(A + 1e-4 * ridge * jnp.eye(A.shape[0], dtype=A.dtype), b)


def _material_fwd(A, b, ridge):
    x = ridge_solve_material(A, b, ridge)
    return x, (A + ridge * jnp.eye(A.shape[0], dtype=A.dtype), x)


@jax.custom_vjp
def ridge_solve_material(A, b, ridge):
    return jnp.linalg.solve(A + ridge * jnp.eye(A.shape[0], dtype=A.dtype), b)


ridge_solve.defvjp(_ridge_fwd, _ridge_bwd)
ridge_solve_material.defvjp(_material_fwd, _ridge_bwd)  # the same None, where the ridge moves the solution


def _kkt(Q, q, A, b):
    m = A.shape[0]
    kkt = jnp.block([[Q, A.T], [A, jnp.zeros((m, m), Q.dtype)]])
    return kkt, jnp.linalg.solve(kkt, jnp.concatenate([-q, b]))


def _kkt_fwd(Q, q, A, b):
    kkt, z = _kkt(Q, q, A, b)
    return z[:Q.shape[0]], (kkt, z, Q.shape[0])


def _kkt_bwd(res, g):
    kkt, z, n = res
    lam = jnp.linalg.solve(kkt, jnp.concatenate([g, jnp.zeros(z.shape[0] - n, g.dtype)]))  # kkt is symmetric
    lam_x, lam_nu, x, nu = lam[:n], lam[n:], z[:n], z[n:]
    return -jnp.outer(lam_x, x), -lam_x, -jnp.outer(lam_nu, x) - jnp.outer(nu, lam_x), lam_nu


@jax.custom_vjp
def constrained_minimum(Q, q, A, b):
    return _kkt(Q, q, A, b)[1][:Q.shape[0]]


constrained_minimum.defvjp(_kkt_fwd, _kkt_bwd)


def _penalised_fwd(Q, q, A, b, penalty):
    return penalised_minimum(Q, q, A, b, penalty), (Q, q, A, b, penalty)


def _penalised_bwd(res, g):
    Q, q, A, b, penalty = res
    _, pullback = jax.vjp(lambda *xs: _kkt(*xs)[1][:Q.shape[0]], Q, q, A, b)
    return (*pullback(g / jnp.sqrt(penalty)), None)  # the penalty is a fixed weight


@jax.custom_vjp
def penalised_minimum(Q, q, A, b, penalty):
    return _kkt(Q, q, A, b)[1][:Q.shape[0]] / jnp.sqrt(penalty)  # NaN for a negative penalty


penalised_minimum.defvjp(_penalised_fwd, _penalised_bwd)
