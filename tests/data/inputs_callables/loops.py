"""A custom_vjp whose functions are `nondiff_argnums` (`body_fn`), and the package's own caller: a custom_vjp
itself, passing a closure. Neither can be drawn: `body_fn` is a function, and the caller is checked as a
custom_vjp (its primal's nested rules never were)."""

from typing import Any, Callable

import jax
import jax.numpy as jnp


def iterate(body_fn: Callable[[Any, Any], Any], n: int, consts, state):
    for _ in range(n):
        state = body_fn(consts, state)
    return state


def _iterate_fwd(body_fn, n, consts, state):
    return iterate(body_fn, n, consts, state), (consts, state)


def _iterate_bwd(body_fn, n, res, g):
    consts, state = res
    _, pullback = jax.vjp(lambda c, s: iterate(body_fn, n, c, s), consts, state)
    return pullback(g)


iterate_backprop = jax.custom_vjp(iterate, nondiff_argnums=(0, 1))
iterate_backprop.defvjp(_iterate_fwd, _iterate_bwd)


@jax.custom_vjp
def damped(x):
    def body_fn(c, s):
        return 0.5 * s + 0.5 * c

    return iterate_backprop(body_fn, 3, x, jnp.zeros_like(x))


def _damped_fwd(x):
    return damped(x), None


def _damped_bwd(_, g):
    return (g * 0.875,)


damped.defvjp(_damped_fwd, _damped_bwd)
