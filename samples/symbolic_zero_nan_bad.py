"""A custom_jvp of `x * sqrt(y)` whose rule densifies the symbolic-zero tangent of `y`: when only `x` is
differentiated, `ty` is a SymbolicZero, the rule turns it into zeros and multiplies it by `x / (2 sqrt(y))`, which is
infinite at `y = 0`: `0 * inf = NaN`, although the derivative in `x`, `sqrt(y)`, is 0. Forward mode (jax.jvp,
jax.jacfwd, jax.hessian) returns the NaN; reverse mode happens to drop the constant term.

Plain JAX::

    >>> jax.jvp(lambda x: scaled_sqrt(x, 0.0), (3.0,), (1.0,))[1]
    Array(nan, dtype=float32, weak_type=True)
    >>> jax.jvp(lambda x: x * jnp.sqrt(0.0), (3.0,), (1.0,))[1]
    Array(0., dtype=float32, weak_type=True)
"""

import jax
import jax.numpy as jnp
from jax.custom_derivatives import SymbolicZero

JAXDIAG = {"scaled_sqrt": {"args": ["f32[4]", "f32[4]@positive"]}}


@jax.custom_jvp
def scaled_sqrt(x, y):
    return x * jnp.sqrt(y)


def _dense(t, like):
    return jnp.zeros_like(like) if isinstance(t, SymbolicZero) else t


def scaled_sqrt_jvp(primals, tangents):  # jaxdiag-expect: JXG027
    x, y = primals
    tx, ty = _dense(tangents[0], x), _dense(tangents[1], y)
    s = jnp.sqrt(y)
    return x * s, tx * s + ty * x / (2.0 * s)


scaled_sqrt.defjvp(scaled_sqrt_jvp, symbolic_zeros=True)
