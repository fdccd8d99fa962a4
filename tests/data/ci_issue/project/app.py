"""The user's project: one function built on the library (its defect is the library's), one custom_vjp of its own
with a wrong gradient (its defect is the project's)."""

import jax
import jax.numpy as jnp
import minilib


def feature(x):
    return minilib.scaled_norm(x) + 1.0


@jax.custom_vjp
def cube(x):
    return x ** 3


def _cube_fwd(x):
    return x ** 3, x


def _cube_bwd(x, g):
    return (2 * x ** 2 * g,)  # the bug: d/dx x**3 is 3 x**2


cube.defvjp(_cube_fwd, _cube_bwd)
