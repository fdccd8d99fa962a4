"""Other members of the custom-solve classes than the samples', each bad one with its correct twin."""

import jax
import jax.numpy as jnp
from jax import lax


def _m(a):
    return a + 4.0 * jnp.eye(a.shape[-1], dtype=a.dtype)


def jacobi_two_steps(a, b):  # unconverged: two Jacobi sweeps are not a solve
    m = _m(a)

    def solve(matvec, rhs):
        d = jnp.diag(m)
        return lax.fori_loop(0, 2, lambda _, x: x + (rhs - matvec(x)) / d, rhs / d)

    return lax.custom_linear_solve(lambda x: m @ x, b, solve, symmetric=False,
                                   transpose_solve=lambda vecmat, r: jnp.linalg.solve(m.T, r))


def jacobi_converged(a, b):
    m = _m(a)

    def solve(matvec, rhs):
        d = jnp.diag(m)
        return lax.fori_loop(0, 200, lambda _, x: x + (rhs - matvec(x)) / d, rhs / d)

    return lax.custom_linear_solve(lambda x: m @ x, b, solve,
                                   transpose_solve=lambda vecmat, r: jnp.linalg.solve(m.T, r))


def half_transpose(a, b):  # transpose_solve off by a factor
    m = _m(a)

    def solve(matvec, rhs):
        return jnp.linalg.solve(m, rhs)

    def transpose_solve(vecmat, rhs):
        return 0.5 * jnp.linalg.solve(m.T, rhs)

    return lax.custom_linear_solve(lambda x: m @ x, b, solve, transpose_solve)


def pytree_aux(a, b):  # a tuple right-hand side and solvers returning diagnostics (has_aux)
    m = _m(a)

    def matvec(x):
        return (m @ x[0], 2.0 * x[1])

    def solve(mv, rhs):
        return (jnp.linalg.solve(m, rhs[0]), rhs[1] / 2.0), jnp.zeros(())

    def transpose_solve(vm, rhs):
        return (jnp.linalg.solve(m.T, rhs[0]), rhs[1] / 2.0), jnp.zeros(())

    x, _ = lax.custom_linear_solve(matvec, (b, b), solve, transpose_solve, has_aux=True)
    return x[0] + x[1]


def jax_gmres(a, b):  # JAX's own solvers on a non-symmetric matrix: trusted and clean
    m = _m(a)
    x, _ = jax.scipy.sparse.linalg.gmres(lambda v: m @ v, b, tol=1e-6)
    y, _ = jax.scipy.sparse.linalg.bicgstab(lambda v: m @ v, b, tol=1e-6)
    return x + y


def jax_cg(a, b):  # conjugate gradients on a positive-definite matrix: JAX's own solver, trusted and clean
    m = a @ a.T + 3.0 * _m(a) @ _m(a).T / 16.0
    x, _ = jax.scipy.sparse.linalg.cg(lambda v: m @ v, b, tol=1e-6)
    return x


def sqrt_wrong_root(c):  # solve stops at a point that is not a root
    def solve(f, x0):
        return lax.fori_loop(0, 2, lambda _, x: 0.5 * (x + c / x), x0)

    return lax.custom_root(lambda x: x * x - c, 10.0 * jnp.ones_like(c), solve, lambda g, y: y / g(1.0))


def sqrt_newton(c):
    def solve(f, x0):
        return lax.fori_loop(0, 40, lambda _, x: 0.5 * (x + c / x), x0)

    return lax.custom_root(lambda x: x * x - c, jnp.ones_like(c), solve, lambda g, y: y / g(1.0))


def sqrt_negated_tangent(c):
    def solve(f, x0):
        return lax.fori_loop(0, 40, lambda _, x: 0.5 * (x + c / x), x0)

    def tangent_solve(g, y):
        return -y / g(1.0)

    return lax.custom_root(lambda x: x * x - c, jnp.ones_like(c), solve, tangent_solve)


def cg_nonsymmetric(a, b):  # conjugate gradients promise symmetric=True: this matrix is not symmetric
    m = _m(a)
    x, _ = jax.scipy.sparse.linalg.cg(lambda v: m @ v, b, tol=1e-6, maxiter=200)  # the finding's line
    return x
