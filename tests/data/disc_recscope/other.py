import jax
import jax.numpy as jnp


def make_bad():
    @jax.custom_jvp
    def bad(x):
        return jnp.sin(x)

    @bad.defjvp
    def _bad_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return jnp.sin(x), 2.0 * jnp.cos(x) * t

    return bad
