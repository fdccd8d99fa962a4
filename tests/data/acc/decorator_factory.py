"""A decorator that gives any function a derivative rule (`@with_central_difference_jvp` over a host function): its
only use is the package's docstring example, so no public function reaches the custom_jvp it makes, and its one
parameter is a function no call site passes. Called with jaxdiag's stand-in for that function, the rule it returns
is checked; what it computes depends on the stand-in, so its verdicts are notes that say so. `with_backward_jvp`
takes a one-sided difference with the wrong sign."""

import jax
import jax.numpy as jnp

STEP = 1e-3


def with_central_difference_jvp(func):
    """Define the JVP of `func` by central differences."""
    func = jax.custom_jvp(func)

    @func.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        slope = (func(x + STEP) - func(x - STEP)) / (2 * STEP)
        return func(x), slope * t

    return func


def with_backward_jvp(func):
    """Define the JVP of `func` by a one-sided difference."""
    func = jax.custom_jvp(func)

    @func.defjvp
    def _jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        slope = (func(x - STEP) - func(x)) / STEP
        return func(x), slope * t

    return func
