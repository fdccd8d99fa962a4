"""JXG032 bad: lax.custom_root with a tangent_solve that does not solve the linearized system: the implicit-function gradient
JAX builds from it is silently wrong (JAX never checks `g(tangent_solve(g, y)) == y`).

- `cube_root`: tangent_solve forgets to divide by the slope g(1) (JXG032 at its def line);
- `fixed_point`: a vector root whose tangent_solve divides by g(ones), which is right only for a diagonal
  Jacobian (JXG032 at its def line).

Plain JAX shows it: `jax.grad(cube_root)(8.0)` gives 1.0, but the cube root's slope at 8 is 1/12 (and
`(cube_root(8.001) - cube_root(7.999)) / 0.002` is 0.0833); `jax.jacobian(fixed_point)(c)` differs from the central
differences of `fixed_point` at c.
"""

import jax.numpy as jnp
from jax import lax

JAXDIAG = {"cube_root": {"args": ["f32[]@positive"]},
           "fixed_point": {"args": ["f32[3]"]}}


def _newton(f, x0, steps=30):
    from jax import grad

    def step(x, _):
        return x - f(x) / grad(f)(x), None

    return lax.scan(step, x0, None, length=steps)[0]


def cube_root(c):  # jaxdiag-expect: JXG014
    def solve(f, x0):
        return _newton(f, x0)

    def tangent_solve(g, y):  # jaxdiag-expect: JXG032
        return y

    return lax.custom_root(lambda x: x ** 3 - c, jnp.ones_like(c), solve, tangent_solve)


def fixed_point(c):  # jaxdiag-expect: JXG014
    m = jnp.array([[0.2, 0.1, 0.0], [0.0, 0.2, 0.1], [0.1, 0.0, 0.2]], c.dtype)

    def f(x):  # x = tanh(m @ x) + c, a contraction
        return x - jnp.tanh(m @ x) - c

    def solve(f, x0):
        return lax.fori_loop(0, 60, lambda _, x: x - f(x), x0)

    def tangent_solve(g, y):  # jaxdiag-expect: JXG032
        return y / g(jnp.ones_like(y))

    return lax.custom_root(f, jnp.zeros_like(c), solve, tangent_solve)
