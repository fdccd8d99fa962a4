"""Bernstein bases defined only on [0, 1], as their docstrings say, clamped outside: there the JVP extends the
endpoint slope where the primal is flat. The number of polynomials is static with no default, so the basis is
checked where its public caller passes one; that caller divides by a scale (1 by default), so on its inferred
standard-normal inputs it hands the basis values outside [0, 1].

`bernstein` is right on [0, 1]; `bernstein_steep` has a doubled slope there (a bug inside the contract). Plain JAX,
on `x = jnp.array([0.2, 0.7])` and `num=3`: `jax.jvp(lambda x: bernstein(x, 3), (x,), (ones,))` equals the same
with `bernstein.fun`; for `bernstein_steep` it is twice that."""

import functools

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln


def _basis(x, num):
    n = num - 1
    v = jnp.arange(num)
    log_binom = gammaln(n + 1.0) - gammaln(v + 1.0) - gammaln(n - v + 1.0)
    t = jnp.clip(x, 1e-6, 1 - 1e-6)[..., None]
    return jnp.exp(log_binom + v * jnp.log(t) + (n - v) * jnp.log1p(-t))


def _slope(x, num):
    lower = jnp.concatenate([_basis(x, num - 1), jnp.zeros_like(x)[..., None]], axis=-1)
    return (num - 1) * (jnp.roll(lower, 1, axis=-1).at[..., 0].set(0.0) - lower)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def bernstein(x, num):
    """The `num` Bernstein polynomials of degree num - 1.

    Note: they are only defined for x in the interval [0, 1].
    """
    return _basis(x, num)


@bernstein.defjvp
def _bernstein_jvp(num, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return bernstein(x, num), _slope(x, num) * x_dot[..., None]


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def bernstein_steep(x, num):
    """The same basis, for 0 <= x <= 1."""
    return _basis(x, num)


@bernstein_steep.defjvp
def _bernstein_steep_jvp(num, primals, tangents):
    (x,), (x_dot,) = primals, tangents
    return bernstein_steep(x, num), 2.0 * _slope(x, num) * x_dot[..., None]  # the bug: twice the slope


def basis(x, limit=1.0):
    """Three basis functions on [0, limit]."""
    return bernstein(x / limit, 3)


def steep_basis(x, limit=1.0):
    """The steep basis on [0, limit]."""
    return bernstein_steep(x / limit, 3)
