"""The same factory with a JVP off by a factor of two, reached through `smooth(x, n)` (`n` unannotated): a wrong
rule found only by running the wrapper with an int `n`."""

import jax


def make(n):
    @jax.custom_jvp
    def wrong_power_sum(x):
        return sum(x ** k for k in range(1, n + 1))

    @wrong_power_sum.defjvp
    def _wrong_power_sum_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return wrong_power_sum(x), 2.0 * sum(k * x ** (k - 1) for k in range(1, n + 1)) * t

    return wrong_power_sum


def smooth(x, n):
    return make(n)(x)
