import jax.numpy as jnp
def base(x):
    return jnp.sin(x)
