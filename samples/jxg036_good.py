"""The fix of jxg036_bad.py: every term of the gradient is multiplied by the cotangent."""

import jax

JAXDIAG = {"shifted_square": {"args": ["f32[4]"]}}


@jax.custom_vjp
def shifted_square(x):
    return x ** 2 - 3 * x


def shifted_square_fwd(x):
    return x ** 2 - 3 * x, x


def shifted_square_bwd(x, g):
    return ((2 * x - 3) * g,)


shifted_square.defvjp(shifted_square_fwd, shifted_square_bwd)
