"""JXN018 bad: `soft_max(x, temperature)`'s JVP rule refuses tangents of `temperature` on purpose (its own
`raise`); its tangent in `x` is right. jaxdiag holds `temperature` constant, checks `x`, and says so in a note. JAX
fails the same way when asked for the derivative in `temperature`."""

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero


@jax.custom_jvp
def soft_max(x, temperature: float):
    return temperature * jax.nn.logsumexp(x / temperature)


def _soft_max_jvp(primals, tangents):
    x, temperature = primals
    x_dot, temperature_dot = tangents
    if not isinstance(temperature_dot, SymbolicZero):
        raise NotImplementedError("soft_max is not differentiable in its temperature")
    out = soft_max(x, temperature)
    if isinstance(x_dot, SymbolicZero):
        return out, jnp.zeros_like(out)
    return out, jnp.sum(jax.nn.softmax(x / temperature) * x_dot)


soft_max.defjvp(_soft_max_jvp, symbolic_zeros=True)
