"""A public contraction whose docstring example passes its subscripts as a string (`'bk,kn->bn'`): the example's
values are Python values, so the string is a static argument, not an array SPEC. Reading it as a SPEC made
`jaxdiag check` of the whole package a usage error (exit 2) before anything was checked."""

import jax
import jax.numpy as jnp


def contract(subscripts, x, w):
    """Contract `x` and `w` as `subscripts` says.

    >>> import jax.numpy as jnp
    >>> from documented_subscripts import contract
    >>> contract('bk,kn->bn', jnp.ones((5, 3)), jnp.ones((3, 4))).shape
    (5, 4)
    """

    @jax.custom_jvp
    def product(x, w):
        return jnp.einsum(subscripts, x, w)

    @product.defjvp
    def product_jvp(primals, tangents):
        (x, w), (t_x, t_w) = primals, tangents
        return product(x, w), jnp.einsum(subscripts, t_x, w) + jnp.einsum(subscripts, x, t_w)

    return product(x, w)
