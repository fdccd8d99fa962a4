"""A special function defined from a domain edge on (like the principal branch of Lambert's W from -1/e): below
the edge its primal is NaN, and so is every derivative. Its JVP is right wherever the function is defined."""

import jax
import jax.numpy as jnp

EDGE = -0.5


@jax.custom_jvp
def root_from_edge(x):
    return jnp.sqrt(x - EDGE)  # NaN below EDGE: outside the domain


@root_from_edge.defjvp
def root_from_edge_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    y = root_from_edge(x)
    return y, t * 0.5 / y


@jax.custom_jvp
def root_from_edge_flat(x):
    return jnp.sqrt(x - EDGE)


@root_from_edge_flat.defjvp
def root_from_edge_flat_jvp(primals, tangents):  # jaxdiag-expect: JXG019
    (x,), (t,) = primals, tangents
    y = root_from_edge_flat(x)
    return y, t * 0.5 / jax.lax.stop_gradient(y)  # no derivative of y: second derivatives vanish
