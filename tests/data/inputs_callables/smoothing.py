"""A decorator factory making a custom_jvp around the user's function, its JVP rule twice the true derivative: a
defect of the factory whatever function it wraps."""

import jax


def smoothed(fn):
    @jax.custom_jvp
    def _f(x):
        return fn(x)

    @_f.defjvp
    def _f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        y, dy = jax.jvp(fn, (x,), (t,))
        return y, 2.0 * dy

    return _f
