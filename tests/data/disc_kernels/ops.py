"""Kernels held by Kernel objects; the public functions pass `order`, which the kernels require."""

import jax.numpy as jnp

from ._op import Kernel


def _power_kernel(x, *, order):
    return x ** order


def _power_jvp(x, t, *, order):
    return order * x ** (order - 1) * t


def _scaled_kernel(x, *, order):
    return order * jnp.sin(x)


def _scaled_jvp_wrong(x, t, *, order):
    return jnp.cos(x) * t  # forgets the factor `order`


power_p = Kernel("disc_power", _power_kernel, _power_jvp)
scaled_p = Kernel("disc_scaled", _scaled_kernel, _scaled_jvp_wrong)


def power(x, order=3):
    return power_p(x, order=order)


def scaled(x):
    return scaled_p(x, order=2)
