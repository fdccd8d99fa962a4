"""A bwd with a term not multiplied by the cotangent: d/dx (x^2 - 3x) is 2x - 3, written `2 * x * g - 3`. At
g = 1 (`jax.grad` of the function alone) it is right; under any other cotangent, a weighted loss, a chain rule, a
batch sum, it adds the wrong constant, silently.

Plain JAX::

    >>> jax.grad(shifted_square)(2.0), jax.grad(lambda x: 5 * shifted_square(x))(2.0)
    (Array(1., dtype=float32, weak_type=True), Array(17., dtype=float32, weak_type=True))
    >>> jax.grad(lambda x: 5 * (x ** 2 - 3 * x))(2.0)
    Array(5., dtype=float32, weak_type=True)
"""

import jax

JAXDIAG = {"shifted_square": {"args": ["f32[4]"]}}


@jax.custom_vjp
def shifted_square(x):
    return x ** 2 - 3 * x


def shifted_square_fwd(x):
    return x ** 2 - 3 * x, x


def shifted_square_bwd(x, g):
    return (2 * x * g - 3,)  # jaxdiag-expect: JXG036


shifted_square.defvjp(shifted_square_fwd, shifted_square_bwd)
