import jax.numpy as jnp
from jax.extend.core import Primitive

tanh_p = Primitive("exporter.tanh")
tanh_p.def_impl(jnp.tanh)
tanh_p.def_abstract_eval(lambda x: x)


def patched_tanh(x):
    return tanh_p.bind(x)
