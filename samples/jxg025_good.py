"""JXG025 good: the same identity with its derivative instead of a refusal: the JVP rule passes the tangent
through, so `jax.grad` works through `frozen` and matches finite differences."""

import jax

JAXDIAG = {"frozen": {"args": ["f32[3]"]}}


@jax.custom_jvp
def frozen(x):
    return x


@frozen.defjvp
def frozen_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return x, t
