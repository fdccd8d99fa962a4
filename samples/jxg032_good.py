"""JXG032 good: lax.custom_root whose solve returns a root of f and whose tangent_solve solves the linearized system g(x) = y:
`y / g(1.0)` for a scalar root, a dense solve with the Jacobian of g for a vector one."""

import jax
import jax.numpy as jnp
from jax import lax

JAXDIAG = {"cube_root": {"args": ["f32[]@positive"]},
           "fixed_point": {"args": ["f32[3]"]}}


def _newton(f, x0, steps=30):
    def step(x, _):
        return x - f(x) / jax.grad(f)(x), None

    return lax.scan(step, x0, None, length=steps)[0]


def cube_root(c):
    def solve(f, x0):
        return _newton(f, x0)

    def tangent_solve(g, y):
        return y / g(1.0)

    return lax.custom_root(lambda x: x ** 3 - c, jnp.ones_like(c), solve, tangent_solve)


def fixed_point(c):
    m = jnp.array([[0.2, 0.1, 0.0], [0.0, 0.2, 0.1], [0.1, 0.0, 0.2]], c.dtype)

    def f(x):  # x = tanh(m @ x) + c, a contraction
        return x - jnp.tanh(m @ x) - c

    def solve(f, x0):
        return lax.fori_loop(0, 60, lambda _, x: x - f(x), x0)

    def tangent_solve(g, y):
        return jnp.linalg.solve(jax.jacobian(g)(y), y)

    return lax.custom_root(f, jnp.zeros_like(c), solve, tangent_solve)
