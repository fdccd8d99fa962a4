"""A root finder with its tolerance as an operand (tests/test_unseen_classes.py): Newton's method for the cube root
stops updating an entry once its step is below `tol`, and the JVP is the implicit function theorem's. On a random
`tol` (about 1) the search stops anywhere and the right rule was found wrong (JXG024) against finite differences of
a value it never converged to; `cube_root_halved` halves the derivative and is found at any tolerance."""

import jax
import jax.numpy as jnp


def _newton(y, tol):
    def body(_, x):
        step = (x**3 - y) / (3 * x**2)
        return jnp.where(jnp.abs(step) > tol, x - step, x)

    return jax.lax.fori_loop(0, 40, body, jnp.maximum(y, 1.0))


@jax.custom_jvp
def cube_root(y, tol):
    """The cube root of a positive `y`, to within `tol`."""
    return _newton(y, tol)


@cube_root.defjvp
def _cube_root_jvp(primals, tangents):
    (y, tol), (dy, _) = primals, tangents
    x = _newton(y, tol)
    return x, dy / (3 * x**2)


@jax.custom_jvp
def cube_root_halved(y, tol):
    """The cube root of a positive `y`, to within `tol`."""
    return _newton(y, tol)


@cube_root_halved.defjvp
def _cube_root_halved_jvp(primals, tangents):
    (y, tol), (dy, _) = primals, tangents
    x = _newton(y, tol)
    return x, dy / (6 * x**2)
