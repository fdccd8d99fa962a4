"""A module that turns on x64 as it is imported (as libraries computing in double precision do), so the arrays its
users make are float64 (`jnp.asarray(1.0)`, `jnp.linspace`). Its primal runs NumPy on the host, where float64 is
the default: on float32 inputs it returns float64, its JVP float32, a mismatch that only inputs nobody passes
under x64 show. On float64 inputs everything is right."""

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)


@jax.custom_jvp
def host_scale(x):
    return jnp.asarray(np.asarray(x) * np.full(np.shape(x), 3.0))


@host_scale.defjvp
def _host_scale_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return host_scale(x), 3.0 * t
