"""A custom_jvp whose derivative is exactly zero but whose rule computes it by cancellation, as an eigenvector's
response to a start vector it does not depend on comes out of a Krylov rule: the tangent is a linear formula whose
value is float32 rounding (about 1e-7 of the values), and rounding is neither exactly additive nor homogeneous. No
finding: it is zero to the output's precision. `drifting`'s rule adds a term that is not linear: found."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def settled(x):
    return jnp.sin(x) ** 2 + jnp.cos(x) ** 2 + 2.0


@settled.defjvp
def _settled_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return settled(x), t * jnp.cos(x) ** 2 + t * jnp.sin(x) ** 2 - t


@jax.custom_jvp
def drifting(x):
    return jnp.sin(x) ** 2 + jnp.cos(x) ** 2 + 2.0


@drifting.defjvp
def _drifting_jvp(primals, tangents):  # jaxdiag-expect: JXG020
    (x,), (t,) = primals, tangents
    return drifting(x), t * jnp.cos(x) ** 2 + t * jnp.sin(x) ** 2 - t + 1e-3 * jnp.abs(t)
