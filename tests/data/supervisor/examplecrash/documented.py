"""A kernel whose impl crashes the process (tests/test_supervisor.py), checked at its package's documented call: the
author's own call, so the crash while jaxdiag prepares it is an error naming those inputs (before: no inputs)."""

import ctypes

import jax.numpy as jnp
from jax.extend.core import Primitive

crash_p = Primitive("crash")


def _crash_impl(x):
    ctypes.string_at(0)
    return x


crash_p.def_impl(_crash_impl)
crash_p.def_abstract_eval(lambda x: x)


def scaled(x):
    """Twice the kernel.

    >>> scaled(jnp.ones(3))
    """
    return 2 * crash_p.bind(x)
