"""Implicit-differentiation solves taking the operator and the solver as functions, written as their documentation
says (the solver inverts the operator; a recycling solver returns `(x, state)`). Correct: what jaxdiag's stand-ins
do with them (a "solver" that inverts nothing, a single array where a pair is promised) is no defect of this code."""

from functools import partial
from typing import Callable

import jax
import jax.numpy as jnp


def linear_solve(matvec: Callable, b: jax.Array, solver: Callable) -> jax.Array:
    """Solves matvec(x) = b with `solver(matvec, b)`, differentiated implicitly (one transposed solve)."""
    return jax.lax.custom_linear_solve(matvec, b, solve=solver,
                                       transpose_solve=lambda vecmat, y: solver(vecmat, y))


def root_solve(f: Callable, x0: jax.Array, solver: Callable) -> jax.Array:
    """A root of `f` found by `solver(f, x0)`, differentiated by the implicit function theorem."""
    return jax.lax.custom_root(f, x0, solver, lambda g, y: y / g(jnp.ones_like(y)))


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def _recycled(operator, solver, scale, b):
    x, _ = solver(lambda v: operator(scale, v), b, None)
    return x


def _recycled_fwd(operator, solver, scale, b):
    x, state = solver(lambda v: operator(scale, v), b, None)
    return x, (scale, x, state)


def _recycled_bwd(operator, solver, residuals, g):
    scale, x, state = residuals
    adjoint, _ = solver(lambda v: operator(scale, v), g, state)  # the operator is symmetric
    _, pullback = jax.vjp(lambda s: operator(s, x), scale)
    return -pullback(adjoint)[0], adjoint


_recycled.defvjp(_recycled_fwd, _recycled_bwd)


def recycled_solve(operator: Callable, solver: Callable, scale: jax.Array, b: jax.Array) -> jax.Array:
    """`solver(matvec, rhs, state) -> (x, state)`; `operator(scale, x)` is symmetric and linear in x."""
    return _recycled(operator, solver, scale, b)


def _newton(f, x0):
    def step(x, _):
        value, slope = jax.jvp(f, (x,), (jnp.ones_like(x),))
        return x - value / slope, None

    return jax.lax.scan(step, x0, None, length=8)[0]


def _tangent_solve(g, y):
    return y / g(jnp.ones_like(y))


def newton_root(f: Callable, x0: jax.Array) -> jax.Array:
    """A root of `f` by Newton's method, differentiated implicitly; the solver and the tangent solve are functions of
    this module, so no function the root traces is written inside this one."""
    return jax.lax.custom_root(f, x0, _newton, _tangent_solve)
