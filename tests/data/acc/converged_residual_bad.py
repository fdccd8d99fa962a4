"""converged_residual.py whose second output moves with the input (0.01 x added): the bwd that ignores its
cotangent drops a real gradient."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def newton_sqrt(x):  # sqrt(1 + x**2), defined everywhere
    s = 1 + x * x
    y = s
    for _ in range(5):  # converged to rounding for |x| < 2
        y = 0.5 * (y + s / y)
    return y, jnp.abs(y * y - s) + 0.01 * x


def _newton_sqrt_fwd(x):
    y, residual = newton_sqrt(x)
    return (y, residual), (x, y)


def _newton_sqrt_bwd(saved, cotangents):  # jaxdiag-expect: JXG011
    ct_y, _ = cotangents  # the residual is a convergence diagnostic: not differentiated
    x, y = saved
    return (ct_y * x / y,)


newton_sqrt.defvjp(_newton_sqrt_fwd, _newton_sqrt_bwd)
