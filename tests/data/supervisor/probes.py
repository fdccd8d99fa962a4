"""Probe targets whose rules misbehave towards the process that checks them (tests/test_supervisor.py).

Each `custom_jvp` is correct as a function; only its JVP rule does something to the process: exits, crashes,
raises a BaseException, hangs, prints megabytes, leaves a thread running, or changes JAX's global state. The
behaviour is chosen by the function name, so one module holds the whole battery.
"""

import ctypes
import os
import sys
import threading
import time

import jax
import jax.numpy as jnp


class CustomStop(BaseException):
    """A BaseException that is not an Exception."""


def _misbehave(how):
    if how == "os_exit":
        os._exit(0)
    if how == "system_exit":
        raise SystemExit(0)
    if how == "sys_exit_3":
        sys.exit(3)
    if how == "keyboard_interrupt":
        raise KeyboardInterrupt
    if how == "custom_base":
        raise CustomStop("stop")
    if how == "segfault":
        ctypes.string_at(0)
    if how == "hang":
        while True:
            time.sleep(0.05)
    if how == "chatty":
        sys.stdout.write("x" * 2_000_000 + "\n")
        sys.stdout.flush()
        os.write(1, b"native-level output\n")
    if how == "thread":
        threading.Thread(target=time.sleep, args=(3600,), name="probe-thread").start()
    if how == "x64":
        jax.config.update("jax_enable_x64", True)
    if how == "debug_nans":
        jax.config.update("jax_debug_nans", True)


def _make(how):
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        _misbehave(how)
        return jnp.sin(x), jnp.cos(x) * t

    f.__name__ = how
    return f


os_exit = _make("os_exit")
system_exit = _make("system_exit")
sys_exit_3 = _make("sys_exit_3")
keyboard_interrupt = _make("keyboard_interrupt")
custom_base = _make("custom_base")
segfault = _make("segfault")
hang = _make("hang")
chatty = _make("chatty")
thread = _make("thread")
x64 = _make("x64")
debug_nans = _make("debug_nans")
fine = _make("fine")
