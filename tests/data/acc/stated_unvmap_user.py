"""Functions calling the unvmap primitives of `stated_unvmap` through their wrappers: each primitive is checked as
a rule nested in the function, and what its wrapper's docstring states holds there too."""

import jax.numpy as jnp
from stated_unvmap import any_example, any_flag

JAXDIAG = {"clip_if_any": {"args": ["f32[3]"]}, "clip_if_flag": {"args": ["f32[3]"]}}


def clip_if_any(x):
    return jnp.where(any_example(x > 1.0), jnp.clip(x, -1.0, 1.0), x)


def clip_if_flag(x):
    return jnp.where(any_flag(x > 1.0), jnp.clip(x, -1.0, 1.0), x)
