"""A custom_jvp special function of an integer order held in nondiff_argnums, as special-function libraries write
them: `n` goes to Python's `range` and NumPy's own tables, so only an int runs it, and its JVP calls the order
below. Nothing calls it; `n` is an int by its name. `periodic_wrong`'s JVP forgets the factor `n`."""

from functools import partial
from math import comb

import jax


def _bernoulli_polynomial(n, x):
    numbers = [1.0, -0.5, 1 / 6, 0.0, -1 / 30, 0.0, 1 / 42, 0.0, -1 / 30]
    return sum(comb(n, k) * numbers[k] * x ** (n - k) for k in range(n + 1))


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def periodic(n, x):
    return _bernoulli_polynomial(n, x % 1)


@periodic.defjvp
def _periodic_jvp(n, primals, tangents):
    (x,), (t,) = primals, tangents
    return periodic(n, x), n * periodic(n - 1, x) * t


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def periodic_wrong(n, x):
    return _bernoulli_polynomial(n, x % 1)


@periodic_wrong.defjvp
def _periodic_wrong_jvp(n, primals, tangents):  # jaxdiag-expect: JXG024
    (x,), (t,) = primals, tangents
    return periodic_wrong(n, x), periodic_wrong(n - 1, x) * t
