"""A special function computed on the host, its derivative by a host routine that takes the derivative order as an
operand, as wrappers of SciPy's `ivp(v, z, n)` do. Under `vmap`, `vmap_method='expand_dims'` gives every operand a
batch axis, the order too, and the host routine refuses an array order: `jax.vmap(jax.grad(f))` fails although the
eager gradient works (JXG016, naming the callback's own error and a fix for the callback)."""

import jax
import jax.numpy as jnp
import numpy as np


def _host_value(x):
    return np.asarray(np.sinh(x), dtype=x.dtype)


def _host_derivative(x, n):
    if np.ndim(n) != 0:
        raise TypeError("n must be a non-negative integer")
    return np.asarray(np.cosh(x) if int(n) % 2 else np.sinh(x), dtype=x.dtype)


def _call(host, x, *operands):
    result = jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))
    return jax.pure_callback(host, result, x, *operands, vmap_method="expand_dims")


@jax.custom_jvp
def host_sinh(x):
    return _call(_host_value, x)


@host_sinh.defjvp
def _host_sinh_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return host_sinh(x), _call(_host_derivative, x, jnp.asarray(1)) * dx


@jax.custom_jvp
def host_sinh_static(x):
    return _call(_host_value, x)


@host_sinh_static.defjvp
def _host_sinh_static_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return host_sinh_static(x), _call(lambda x: _host_derivative(x, 1), x) * dx  # the order stays a Python int
