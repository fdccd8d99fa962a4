"""A decorator factory applied at import whose product is a plain wrapper: the custom_vjp is made each time the
wrapper runs, so no module attribute holds it. Its bwd drops a factor of 2."""

import functools

import jax
import jax.numpy as jnp


def implicit(scale: float):
    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(x):
            @jax.custom_vjp
            def solve(x):
                return fn(x) * scale

            def solve_fwd(x):
                return solve(x), x

            def solve_bwd(x, g):
                return (g * scale * jnp.cos(x),)  # fn is sin below: the factor 2 of sin(2x) is dropped

            solve.defvjp(solve_fwd, solve_bwd)
            return solve(x)

        return wrapper

    return decorate


@implicit(scale=1.5)
def double_angle(x):
    return jnp.sin(2.0 * x) / 2.0 * 2.0
