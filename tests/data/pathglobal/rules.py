import jax
import jax.numpy as jnp


@jax.custom_jvp
def f(x):
    return jnp.sin(x)


@f.defjvp
def f_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jnp.sin(x), jnp.cos(x) * t
