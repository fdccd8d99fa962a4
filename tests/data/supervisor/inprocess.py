"""Probes for the in-process API (tests/test_supervisor.py): what can safely happen inside the test process."""

import threading

import jax
import jax.numpy as jnp

RELEASE = threading.Event()  # the test sets it, so the thread a rule leaves behind ends with the test


class CustomStop(BaseException):
    pass


def _make(misbehave):
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        misbehave()
        return jnp.sin(x), jnp.cos(x) * t

    return f


def _exit():
    raise SystemExit(0)


def _custom():
    raise CustomStop("stop")


def _interrupt():
    raise KeyboardInterrupt


def _thread():
    threading.Thread(target=RELEASE.wait, name="left-behind").start()


def _flags():
    jax.config.update("jax_debug_nans", True)


def _sin_rule():
    from jax.interpreters import ad

    ad.primitive_jvps[jax.lax.sin_p] = lambda primals, tangents: (jnp.sin(primals[0]), tangents[0])


system_exit = _make(_exit)
custom_base = _make(_custom)
keyboard_interrupt = _make(_interrupt)
thread = _make(_thread)
flags = _make(_flags)
sin_rule = _make(_sin_rule)
