import jax
from .helpers import base

@jax.custom_jvp
def f(x):
    return base(x)

@f.defjvp
def f_jvp(p, t):
    return f(p[0]), jax.numpy.cos(p[0]) * t[0]
