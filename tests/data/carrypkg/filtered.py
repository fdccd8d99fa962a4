"""A rule built with a helper library's filter-style decorator: discovery dates it by the user's function."""

import jax.numpy as jnp
from helperlib import filter_vjp


def _softplus(x):
    return jnp.logaddexp(x, 0.0)


def _softplus_fwd(x):
    return _softplus(x), x


def _softplus_bwd(x, g):
    return (g / (1 + jnp.exp(-x)),)


softplus = filter_vjp(_softplus).def_vjp(_softplus_fwd, _softplus_bwd)
