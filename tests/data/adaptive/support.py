"""An output whose size depends on the values (an adaptive fit keeps as many samples as its error estimate asks
for): any step changes how many entries are kept, so there is no difference quotient, and jaxdiag must say so
rather than fail (it stacked differences of different shapes: an internal error)."""

import jax
import numpy as np


def _kept(values):
    v = np.asarray(values)
    return 1 + int(np.sum(np.abs(v)) * 1e4) % v.size


@jax.custom_jvp
def leading(values):
    """The first entries of `values`, as many as their size asks for, scaled by 2."""
    return 2.0 * values[:_kept(values)]


@leading.defjvp
def _leading_jvp(primals, tangents):
    (v,), (dv,) = primals, tangents
    return leading(v), 2.0 * dv[:_kept(v)]
