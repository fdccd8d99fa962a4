"""JXG025 bad: the JVP rule refuses any tangent with its own `raise`: `jax.grad` through `frozen` fails with the
rule's message wherever its input is differentiated. Deliberate here (the message says so), so a warning."""

import jax

JAXDIAG = {"frozen": {"args": ["f32[3]"]}}


@jax.custom_jvp
def frozen(x):
    return x


@frozen.defjvp
def frozen_jvp(primals, tangents):  # jaxdiag-expect: JXG025
    raise RuntimeError("frozen values must not be differentiated: wrap them in lax.stop_gradient first")
