"""A function whose option has no default (`smooth(x, *, steps=None)` raises "'steps' must be set" when called as
`smooth(x)`), around a custom_jvp whose derivative is twice the softplus slope. jaxdiag learns `steps` from the
error; the plain-JAX script of the finding must pass it too, or its first call fails on the missing option, a
failure that is not the defect."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def _soft(x):
    return jnp.log1p(jnp.exp(x))


@_soft.defjvp
def _soft_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return _soft(x), 2.0 * dx * jax.nn.sigmoid(x)


def smooth(x: jax.Array, *, steps: int | None = None) -> jax.Array:
    if steps is None:
        raise ValueError("'steps' must be set")
    for _ in range(steps):
        x = _soft(x)
    return x
