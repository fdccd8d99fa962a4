"""A window configured by an object the library makes: `make_window_params(tol)` picks the support from the
tolerance and the shape parameter from the support, and `window(x, params: "WindowParams")` builds the window and
its derivative as closures and hands them to a custom_vjp as static arguments (no caller could pass those). Fields
drawn one by one would not agree, and an array is no `WindowParams`; the factory's object is what callers pass.
`_window`'s bwd is right; `_steep_window`'s doubles the slope."""

import math
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp


class WindowParams(NamedTuple):
    support: int
    beta: float


def make_window_params(tol: float, upsampling: float = 2.0) -> WindowParams:
    """The support where an exponential-of-semicircle window falls below `tol`, and its shape parameter."""
    support = max(2, math.ceil(-math.log10(tol)) + 1)
    return WindowParams(support=support, beta=2.3 * support * (1 - 0.5 / upsampling))


def _closures(params):
    half = params.support / 2

    def phi(z):
        inside = 1 - (z / half) ** 2
        return jnp.exp(params.beta * (jnp.sqrt(jnp.clip(inside, 0.0, 1.0)) - 1))

    return phi, jax.grad(phi)


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _window(x, phi, dphi):
    return phi(x)


def _window_fwd(x, phi, dphi):
    return phi(x), x


def _window_bwd(phi, dphi, x, g):
    return (g * jax.vmap(dphi)(x.ravel()).reshape(x.shape),)


_window.defvjp(_window_fwd, _window_bwd)


def window(x: jax.Array, params: "WindowParams") -> jax.Array:
    """The window at the points `x` (grid units from the centre)."""
    phi, dphi = _closures(params)
    return _window(x, phi, dphi)


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def _steep_window(x, phi, dphi):
    return phi(x)


def _steep_window_fwd(x, phi, dphi):
    return phi(x), x


def _steep_window_bwd(phi, dphi, x, g):
    return (2.0 * g * jax.vmap(dphi)(x.ravel()).reshape(x.shape),)


_steep_window.defvjp(_steep_window_fwd, _steep_window_bwd)


def steep_window(x: jax.Array, params: "WindowParams") -> jax.Array:
    phi, dphi = _closures(params)
    return _steep_window(x, phi, dphi)
