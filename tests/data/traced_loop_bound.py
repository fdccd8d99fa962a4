"""A JVP that runs a loop whose trip count comes from the data (quadax's Romberg loop pattern): eagerly the count is
concrete and fori_loop becomes a scan, so jax.grad works; under vmap the count is batched, fori_loop becomes a
while_loop, and reverse mode cannot transpose it."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def repeated(x):
    return x * (jnp.argmax(x) + 1)


@repeated.defjvp
def repeated_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    count = jnp.argmax(x) + 1
    tangent_out = jax.lax.fori_loop(0, count, lambda i, acc: acc + t, jnp.zeros_like(t))
    return repeated(x), tangent_out
