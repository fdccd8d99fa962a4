"""A package that sets a JAX flag when it is imported (a real one turns on double precision): the configuration is the
package's, set once at import time, never by a rule. It is no JXU006 of its checks (it was, in `jaxdiag grad`), and
the run still restores it."""

import jax
import jax.numpy as jnp

jax.config.update("jax_debug_infs", True)  # set at import (a flag the tests never turn on themselves)


@jax.custom_jvp
def cube(x):
    return x**3


@cube.defjvp
def _cube_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return cube(x), 3 * x**2 * t
