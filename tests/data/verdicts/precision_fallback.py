"""A guarded solve whose acceptance test asks for a squared relative residual (1e-20) that float32 barely reaches: in
float32 the decision rests on a rounding-level number (exactly 0 on some inputs and programs, not on others), so
eager, jit and vmap may take different branches; in float64 it always accepts the solution. Its implicit derivative
(custom_linear_solve) is correct."""

import jax
import jax.numpy as jnp


def _solve(matrix, rhs):
    return jax.lax.custom_linear_solve(lambda x: matrix @ x, rhs, lambda mv, b: jnp.linalg.solve(matrix, b),
                                       lambda mv, b: jnp.linalg.solve(matrix.T, b))


def guarded_solve(diag, rhs):
    matrix = jnp.diag(diag) + 0.1 * jnp.ones((diag.shape[0], diag.shape[0]), diag.dtype)
    x = _solve(matrix, rhs)
    residual = jnp.sum((matrix @ x - rhs) ** 2) / jnp.sum(rhs**2)
    accept = residual <= 1e-20
    return jnp.where(accept, x, rhs), residual
