"""The squared magnitude of a complex array with a bwd that forgets the conjugate. JAX's cotangent for a complex
input `z` of a real-valued `f` is `g * conj(df/dz)`-shaped: for `|z|^2` it is `2 g conj(z)`, and `2 g z` points
the gradient the wrong way in the imaginary direction, so gradient descent on `abs2` diverges along `Im z`.

Plain JAX::

    >>> z = jnp.array([1 + 2j], jnp.complex64)
    >>> jax.grad(lambda z: abs2(z).sum())(z)
    Array([2.+4.j], dtype=complex64)
    >>> jax.grad(lambda z: (jnp.abs(z) ** 2).sum())(z)
    Array([2.-4.j], dtype=complex64)
"""

import jax
import jax.numpy as jnp

JAXDIAG = {"abs2": {"args": ["c64[4]"]}}


@jax.custom_vjp
def abs2(z):
    return jnp.real(z * jnp.conj(z))


def abs2_fwd(z):
    return jnp.real(z * jnp.conj(z)), z


def abs2_bwd(z, g):  # jaxdiag-expect: JXG024
    return (2.0 * g * z,)


abs2.defvjp(abs2_fwd, abs2_bwd)
