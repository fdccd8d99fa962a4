"""A filter-style decorator: the module attribute is a callable object holding the custom_jvp."""
import jax
import jax.numpy as jnp


class Holder:
    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return self.fn(*args)


@Holder
@jax.custom_jvp
def soft_sign(x):
    return x / (1 + jnp.abs(x))


@soft_sign.fn.defjvp
def soft_sign_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return soft_sign.fn(x), 2 * t / (1 + jnp.abs(x)) ** 2  # jaxdiag-expect: JXG (the factor 2 is wrong)
