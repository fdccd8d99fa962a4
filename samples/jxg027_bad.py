"""A blocked backward kernel that never writes the tail of its output: the bwd processes whole blocks of 4 and
leaves the last entries of the gradient buffer as they were allocated (NaN here, garbage in a real kernel). The
primal `2 x` is smooth everywhere, so its derivative is finite at every point; the rule's is NaN at 2 of 6.

Plain JAX::

    >>> x = jnp.arange(6.0)
    >>> jax.grad(lambda x: jnp.sum(scale(x)))(x)
    Array([ 2.,  2.,  2.,  2., nan, nan], dtype=float32)
    >>> jax.grad(lambda x: jnp.sum(2.0 * x))(x)
    Array([2., 2., 2., 2., 2., 2.], dtype=float32)
"""

import jax
import jax.numpy as jnp

JAXDIAG = {"scale": {"args": ["f32[6]"]}}
BLOCK = 4


@jax.custom_vjp
def scale(x):
    return 2.0 * x


def scale_fwd(x):
    return 2.0 * x, None


def scale_bwd(_, g):  # jaxdiag-expect: JXG027
    done = g.shape[0] // BLOCK * BLOCK
    out = jnp.full(g.shape, jnp.nan, g.dtype)  # the kernel's output buffer, never written past `done`
    return (out.at[:done].set(2.0 * g[:done]),)


scale.defvjp(scale_fwd, scale_bwd)
