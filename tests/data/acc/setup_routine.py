"""A library's setup routine: a public function without positional arguments that tunes kernels and saves the
winner (here: writes the file named by SETUP_ROUTINE_MARKER), building a custom_vjp inside a function on its way.
Nothing about it is an inferred input, so jaxdiag never calls it; `apply_scaled` leads to the same rule and takes an
array, so it is the carrier the rule is checked in."""

import os

import jax
import jax.numpy as jnp


def _make_scaled():
    @jax.custom_vjp
    def scaled(x):
        return 2.0 * x

    scaled.defvjp(lambda x: (2.0 * x, None), lambda _, g: (2.0 * g,))
    return scaled


def tune(*, save=True, size=1000):
    if save and os.environ.get("SETUP_ROUTINE_MARKER"):
        with open(os.environ["SETUP_ROUTINE_MARKER"], "w") as handle:
            handle.write("tuned and saved")
    return _make_scaled()(jnp.ones(size))


def apply_scaled(x):
    return _make_scaled()(x)
