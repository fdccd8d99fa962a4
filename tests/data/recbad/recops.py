"""A project module for the hand-made bad recordings in bad/: a primitive taking a callable bind param and the
module-level function that carries it. Never imported by the tests: a bad recording is refused before that."""

from os.path import join as joined  # an imported callable: never a carrier, though recops.joined exists

import jax.numpy as jnp
from jax.extend.core import Primitive

scale_p = Primitive("recbad_scale")
scale_p.def_impl(lambda x, *, fn: fn(x))


def run(x):
    return scale_p.bind(jnp.asarray(x), fn=jnp.sin)


__all__ = ["joined", "run", "scale_p"]
