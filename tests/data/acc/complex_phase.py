"""A complex-valued output of a real input: exp(i x) with a custom JVP. `phase`'s rule is right to every order;
`phase_held` stops the gradient of its derivative factor, so its first derivative is right and its second is 0."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def phase(x):
    return jnp.exp(1j * x)


@phase.defjvp
def _phase_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return phase(x), 1j * phase(x) * t


@jax.custom_jvp
def phase_held(x):
    return jnp.exp(1j * x)


@phase_held.defjvp
def _phase_held_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return phase_held(x), jax.lax.stop_gradient(1j * phase_held(x)) * t
