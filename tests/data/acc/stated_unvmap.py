"""Primitives whose batching rule returns one batch-wide value ("unvmap"), bound by public wrappers. `any_example`
says in its docstring that it ignores the batch (the rule's design); `any_flag` says nothing: reported."""

import jax.numpy as jnp
from jax.interpreters import batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

import jax


def _any(x):
    return jnp.any(x)


def _abstract(x):
    return jax.core.ShapedArray((), jnp.bool_)


def _kernel(name):
    prim = Primitive(name)
    prim.def_impl(_any)
    prim.def_abstract_eval(_abstract)
    mlir.register_lowering(prim, mlir.lower_fun(_any, multiple_results=False))
    batching.primitive_batchers[prim] = lambda args, dims: (prim.bind(args[0]), None)
    return prim


any_example_p = _kernel("any_example")
any_flag_p = _kernel("any_flag")


def any_example(x):
    """As `jnp.any`, but ignores batch dimensions: true for the whole batch when any example has a true entry."""
    return any_example_p.bind(x)


def any_flag(x):
    return any_flag_p.bind(x)
