"""A factory making the smoothed maximum of whatever maximiser it is given: the JVP rule uses the maximiser's value as
the gradient (Danskin's theorem), right for a function returning the argmax of its input and wrong for any other.
jaxdiag's stand-in is no maximiser, so its derivative is not judged there."""

from typing import Callable

import jax
import jax.numpy as jnp


def make_max(argmax_fn: Callable[[jax.Array], jax.Array]) -> Callable[[jax.Array], jax.Array]:
    @jax.custom_jvp
    def maximum(x):
        return jnp.sum(argmax_fn(x) * x)

    @maximum.defjvp
    def maximum_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return maximum(x), jnp.sum(argmax_fn(x) * t)

    return maximum
