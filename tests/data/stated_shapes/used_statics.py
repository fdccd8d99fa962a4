"""Statics (nondiff_argnums) with no default, annotation or caller's literal: only how the code uses them, or what
the docstring says of them, tells what they are. `decay(nu, x)` computes `exp(-nu * x)`, a number; its twin's JVP
drops the factor, right only at nu = 1. `stepped`'s `p` is a `range` bound: an int. `shifted_zeta`'s docstring
bounds `s > 1` (at 0.5 its primal is NaN). `wrapped_order` wraps a reference function (`functools.wraps`, as
libraries wrap scipy's ufuncs), whose docstring types `v : float`. `moded`'s `mode` is compared with a string:
not a number, so it stays not checkable."""

import functools
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def decay(nu, x):
    return jnp.exp(-nu * x)


@decay.defjvp
def _decay_jvp(nu, primals, tangents):
    (x,), (t,) = primals, tangents
    return decay(nu, x), -nu * decay(nu, x) * t


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def decay_drops_rate(nu, x):
    return jnp.exp(-nu * x)


@decay_drops_rate.defjvp
def _decay_drops_rate_jvp(nu, primals, tangents):
    (x,), (t,) = primals, tangents
    return decay_drops_rate(nu, x), -decay_drops_rate(nu, x) * t  # the rate dropped


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def stepped(x, p):
    total = jnp.zeros_like(x)
    for k in range(p):
        total = total + x ** k
    return total


@stepped.defjvp
def _stepped_jvp(p, primals, tangents):
    (x,), (t,) = primals, tangents
    slope = jnp.zeros_like(x)
    for k in range(1, p):
        slope = slope + k * x ** (k - 1)
    return stepped(x, p), slope * t


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def shifted_zeta(x, s):
    """A smooth function of x, for real s > 1."""
    return jnp.sqrt(s - 1) * jnp.sin(x)


@shifted_zeta.defjvp
def _shifted_zeta_jvp(s, primals, tangents):
    (x,), (t,) = primals, tangents
    return shifted_zeta(x, s), jnp.sqrt(s - 1) * jnp.cos(x) * t


def _order_reference(v, z):
    """The reference the wrapper stands for.

    Parameters
    ----------
    v : float
        Order.
    z : array_like
        Argument.
    """
    return v * jnp.sin(z)


def _wrap(reference):
    @functools.wraps(reference)
    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def wrapped(*args):
        return reference(*args)

    @wrapped.defjvp
    def _jvp(v, primals, tangents):
        (z,), (t,) = primals, tangents
        return wrapped(v, z), v * jnp.cos(z) * t

    return wrapped


wrapped_order = _wrap(_order_reference)


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def moded(x, mode):
    return jnp.sin(x) if mode == "fast" else jnp.sin(x) + 0.0


@moded.defjvp
def _moded_jvp(mode, primals, tangents):
    (x,), (t,) = primals, tangents
    return moded(x, mode), jnp.cos(x) * t


def _grid(points, ny, nx, use_smooth):
    base = jnp.zeros((ny, nx), points.dtype) + jnp.sum(points)
    return jnp.tanh(base) if use_smooth else base


@partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3))
def gridded(points, ny, nx, use_smooth):
    """Handed on: the grid sizes and the flag are read where `_grid` uses them (a shape, a truth value)."""
    return _grid(points, ny, nx, use_smooth)


def _gridded_fwd(points, ny, nx, use_smooth):
    return _grid(points, ny, nx, use_smooth), points


def _gridded_bwd(ny, nx, use_smooth, points, g):
    slope = 1 - jnp.tanh(jnp.zeros((ny, nx)) + jnp.sum(points)) ** 2 if use_smooth else jnp.ones((ny, nx))
    return (jnp.full(points.shape, jnp.sum(g * slope)),)


gridded.defvjp(_gridded_fwd, _gridded_bwd)


def _fast_kernel(x):
    raise NotImplementedError("the fast kernel runs on an accelerator only")


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def two_paths(x, use_fast_fwd, use_fast_bwd):
    """Two flags choose an accelerator kernel for each pass: the reference path runs with both off."""
    return _fast_kernel(x) if use_fast_fwd else jnp.sin(x)


def _two_paths_fwd(x, use_fast_fwd, use_fast_bwd):
    return two_paths(x, use_fast_fwd, use_fast_bwd), x


def _two_paths_bwd(use_fast_fwd, use_fast_bwd, x, g):
    return (_fast_kernel(g) if use_fast_bwd else g * jnp.cos(x),)


two_paths.defvjp(_two_paths_fwd, _two_paths_bwd)
