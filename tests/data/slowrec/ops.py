"""Two custom_jvp functions made in factories: no module attribute holds them, so `jaxdiag check` reaches them only
through recorded calls that no discovered target claims, each carried by the module-level function that called it.
`looping`'s JVP rule never returns (the forward call the recording saw never ran it); `smooth`'s is correct. The
first must be stopped at the per-target time limit and reported, and the second still checked.
"""

import time

import jax
import jax.numpy as jnp


def make_looping():
    @jax.custom_jvp
    def looping(x):
        return jnp.sin(x)

    @looping.defjvp
    def looping_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        while True:  # the defect: waits for something that never comes
            time.sleep(0.05)
        return looping(x), jnp.cos(x) * t

    return looping


def make_smooth():
    @jax.custom_jvp
    def smooth(x):
        return jnp.sin(x)

    @smooth.defjvp
    def smooth_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return smooth(x), jnp.cos(x) * t

    return smooth


def looping_sum(x):
    return make_looping()(x).sum()


def smooth_sum(x):
    return make_smooth()(x).sum()
