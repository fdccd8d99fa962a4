"""Rules whose option parameters have no default of their own: the public function of the same module fills them
from its defaults, as equinox's `backward_nan(x, name=None, terminate=True)` forwards to `_backward_nan`. Drawing
arrays for `name`, `terminate` or `how` checks the rules at inputs no caller can give them."""

import functools

import jax
import jax.numpy as jnp
from helperlib import filter_vjp


def _zero_nan(x, name, terminate):
    return x


def _zero_nan_fwd(x, name, terminate):
    return x, terminate


def _zero_nan_bwd(terminate, g):
    if terminate:  # a Python `if`: `terminate` is a bool option, never an array
        g = jnp.where(jnp.isnan(g), 0.0, g)
    return g, None, None


zero_nan_rule = filter_vjp(_zero_nan).def_vjp(_zero_nan_fwd, _zero_nan_bwd)


def zero_nan(x, name=None, terminate=True):
    return zero_nan_rule(x, name, terminate)


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def reduce_rule(x, how):
    return jnp.sum(x) if how == "sum" else jnp.mean(x)


def _reduce_fwd(x, how):
    return reduce_rule(x, how), x.shape


def _reduce_bwd(how, shape, g):
    scale = 1.0 if how == "sum" else 1.0 / shape[0]
    return (jnp.full(shape, g * scale),)


reduce_rule.defvjp(_reduce_fwd, _reduce_bwd)


def reduce(x, how="sum"):
    return reduce_rule(x, how)
