"""JXG016 bad: bwd converts the cotangent to NumPy. An eager jax.grad test passes; jax.jit(jax.grad(f)) and
jax.grad(jax.vmap(f)) fail with TracerArrayConversionError. The clipping itself is deliberate
(JXG014 suppressed on the def line), as in the good sample."""

import jax
import jax.numpy as jnp
import numpy as np

JAXDIAG = {"clipped_identity": {"args": ["f32[3]"]}}


@jax.custom_vjp
def clipped_identity(x):
    return x


def clipped_identity_fwd(x):
    return x, None


def clipped_identity_bwd(res, g):  # jaxdiag: ignore[JXG014]  # jaxdiag-expect: JXG016
    return (jnp.asarray(np.clip(np.asarray(g), -0.1, 0.1)),)


clipped_identity.defvjp(clipped_identity_fwd, clipped_identity_bwd)
