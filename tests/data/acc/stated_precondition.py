"""Preconditions a package's code states on the values it is given, and errors that are no such statement.

`amplitude_damping` raises `ValueError` with its own `raise` when two rates sum past 1, deep below its entry point
(as a channel's constructor checks its parameters); `checked_by_assert` asserts instead, `numpy_refuses` lets
NumPy raise, `reraised` raises a caught error again: none of those three states a precondition."""

import numpy as np


def _validate(gamma_a, gamma_b):
    if gamma_a + gamma_b > 1:
        raise ValueError("gamma_a + gamma_b must be in the interval [0, 1]")


def amplitude_damping(gamma_a, gamma_b):
    _validate(gamma_a, gamma_b)
    return np.array([[1.0, 0.0], [0.0, np.sqrt(1 - gamma_a - gamma_b)]])


def checked_by_assert(gamma):
    assert gamma <= 1, "gamma must be at most 1"
    return gamma


def numpy_refuses(x):
    return np.reshape(x, (7, 7))


def reraised(x):
    try:
        return numpy_refuses(x)
    except ValueError as err:
        raise err
