"""A kernel whose impl crashes the process (tests/test_supervisor.py), reached through a caller with no documented
call: run on inputs jaxdiag infers for it, the crash is at most a warning that names them."""

import ctypes

from jax.extend.core import Primitive

undocumented_crash_p = Primitive("undocumented_crash")


def _crash_impl(x):
    ctypes.string_at(0)
    return x


undocumented_crash_p.def_impl(_crash_impl)
undocumented_crash_p.def_abstract_eval(lambda x: x)


def scaled(x):
    return 2 * undocumented_crash_p.bind(x)
