"""A nested custom_jvp inside `lax.scan` whose tangent is the true derivative times a constant: `cube`'s rule says
`2 x^2` where `d(x^3) = 3 x^2`. Every entry has the right sign and a smaller magnitude, as a clipped derivative
would, but the ratio is 2/3 along every direction and at every point: a uniform scale, which no clipping produces
(clipping changes only what exceeds a threshold). jaxdiag checks the nested rule at the values the scan passes it
and grades it from that evidence (JXG024), whatever the seed.

Plain JAX::

    >>> x = jnp.array([0.5, 1.0, 2.0])
    >>> jax.jvp(cube, (x,), (jnp.ones(3),))[1]
    Array([0.5, 2. , 8. ], dtype=float32)
    >>> jax.jvp(lambda x: x ** 3, (x,), (jnp.ones(3),))[1]
    Array([ 0.75,  3.  , 12.  ], dtype=float32)
"""

import jax
import jax.numpy as jnp
from jax import lax

JAXDIAG = {"energy": {"args": ["f32[3]", "f32[6,3]"]}, "cube": {"args": ["f32[3]"]}}


@jax.custom_jvp
def cube(x):
    return x ** 3


@cube.defjvp
def cube_jvp(primals, tangents):  # jaxdiag-expect: JXG024
    (x,), (t,) = primals, tangents
    return cube(x), 2.0 * x * x * t


def energy(h0, xs):  # jaxdiag-expect: JXG014
    def step(h, x):
        h = 0.5 * h + cube(x)
        return h, h

    _, hs = lax.scan(step, h0, xs)
    return jnp.sum(hs)
