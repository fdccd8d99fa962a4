"""Tutorial-style: a function that cannot be differentiated (it converts a traced value to NumPy), no ffi_call."""

import jax.numpy as jnp
import numpy as np

JAXDIAG = {"clipped_norm": {"args": ["f32[3]"]}}


def clipped_norm(x):  # jaxdiag-expect: JXG017
    return jnp.asarray(np.minimum(np.linalg.norm(np.asarray(x)), 1.0))
