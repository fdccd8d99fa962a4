import functools

import jax
import jax.numpy as jnp
import numpy as np


def _make_scaled_exp(scale):
    """A factory: every call makes a new custom_jvp."""

    @jax.custom_jvp
    def scaled_exp(x):
        return jnp.exp(scale * x)

    @scaled_exp.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y = jnp.exp(scale * x)
        return y, y * t  # forgets the chain-rule factor `scale`

    return scaled_exp


def doubled_exp(x):
    return _make_scaled_exp(2.0)(x)


def clipped_square(x):
    """A closure rule made on each call: a correct custom_vjp."""

    @jax.custom_vjp
    def square(v):
        return v * v

    def fwd(v):
        return v * v, v

    def bwd(v, g):
        return (2.0 * v * g,)

    square.defvjp(fwd, bwd)
    return square(x)


def host_sine(x):
    """A callback call site inside a function: its vmap_method is declared."""
    return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="expand_dims")


def _never_called_factory(name: str):
    return jax.custom_jvp(functools.partial(getattr(jnp, name)))


def host_cosine(x):
    """A callback call site without a vmap_method: vmap of it fails."""
    return jax.pure_callback(np.cos, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
