"""A custom_jvp made inside a documented function whose example passes a 0/1 mask: the rule names its operands
otherwise (`a`, `m`), so only the call says that `m` is the function's `mask`, whose domain, binary, the function's
docstring states; the rule is checked on it."""

import jax
import jax.numpy as jnp


def gated(x, mask):
    """Keep the entries of `x` where `mask` is set.

    Args:
        x: values, shape (n,).
        mask: the binary mask, shape (n,).

    Examples:
        >>> gated(jnp.ones(3), jnp.array([1.0, 0.0, 1.0]))
    """

    @jax.custom_jvp
    def gate(a, m):
        return a * m

    @gate.defjvp
    def gate_jvp(primals, tangents):
        (a, m), (da, dm) = primals, tangents
        return gate(a, m), da * m + a * dm

    return gate(x, mask)
