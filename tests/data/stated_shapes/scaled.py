"""Custom VJPs taking a `scale: float` static with no default (nondiff_argnums), as attention kernels take their
softmax scale. `scaled_tanh_forgets_scale`'s backward pass drops the factor: at a scale of 1.0 it would look right;
so does `_ordered_sine`'s JVP, whose static is known to be a float only by the `float(nu)` its caller passes."""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scaled_tanh(x, scale: float):
    return jnp.tanh(scale * x)


def _fwd(x, scale):
    return scaled_tanh(x, scale), x


def _bwd(scale, x, g):
    return (g * scale * (1 - jnp.tanh(scale * x) ** 2),)


def _bwd_forgets_scale(scale, x, g):
    return (g * (1 - jnp.tanh(scale * x) ** 2),)


scaled_tanh.defvjp(_fwd, _bwd)


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scaled_tanh_forgets_scale(x, scale: float):
    return jnp.tanh(scale * x)


scaled_tanh_forgets_scale.defvjp(lambda x, scale: (scaled_tanh_forgets_scale(x, scale), x), _bwd_forgets_scale)


# an order with neither annotation nor default: only the module's own call, `float(nu)`, says it is a float
@partial(jax.custom_jvp, nondiff_argnums=(0,))
def _ordered_sine(nu, x):
    return nu * jnp.sin(x)


@_ordered_sine.defjvp
def _ordered_sine_jvp(nu, primals, tangents):
    (x,), (t,) = primals, tangents
    return _ordered_sine(nu, x), jnp.cos(x) * t  # the order's factor dropped: right only at nu = 1


@partial(jax.jit, static_argnums=0)
def ordered_sine(nu, x):
    return _ordered_sine(float(nu), jnp.asarray(x, dtype=float))
