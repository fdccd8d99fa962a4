"""JXG034 good: soft thresholding whose JVP rule uses both tangents: the output moves by `tx - sign(x) * tlam`
wherever it is not clipped to zero."""

import jax
import jax.numpy as jnp

JAXDIAG = {"soft_threshold": {"args": ["f32[4]", "f32[]@0.1..0.5"]}}


@jax.custom_jvp
def soft_threshold(x, lam):
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - lam, 0.0)


@soft_threshold.defjvp
def soft_threshold_jvp(primals, tangents):
    (x, lam), (tx, tlam) = primals, tangents
    return soft_threshold(x, lam), jnp.where(jnp.abs(x) > lam, tx - jnp.sign(x) * tlam, 0.0)
