"""Correct targets for the input-bound tests: every refusal there is about the inputs given, never the code."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

square_p = Primitive("bounds_square")
square_p.def_impl(lambda x: x * x)
square_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(square_p, mlir.lower_fun(lambda x: x * x, multiple_results=False))
batching.primitive_batchers[square_p] = lambda args, dims: (square_p.bind(*args), dims[0])


@jax.custom_jvp
def sine(x):
    return jnp.sin(x)


@sine.defjvp
def sine_jvp(primals, tangents):
    return sine(primals[0]), jnp.cos(primals[0]) * tangents[0]


def add(x, y):
    return x + y
