"""Targets for the sharding false-alarm sweep (tests/test_sharding.py): JAX's own ops and a user primitive
lowered with `mlir.lower_fun`, all correct under any sharding, so `jaxdiag sharding` must report no error or
warning on them."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.interpreters import ad, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive  # type: ignore[attr-defined,no-redef]


def fft_last(x):
    return jnp.fft.fft(x, axis=-1)


def total(x):
    return jnp.sum(x, axis=-1)


def sort_rows(x):
    return lax.sort(x, dimension=1)


def matmul(a, b):
    return a @ b


def _cumulative(x):
    return jnp.cumsum(jnp.sin(x), axis=-1)


cumulative_sin_p = Primitive("cumulative_sin")
cumulative_sin_p.def_impl(_cumulative)
cumulative_sin_p.def_abstract_eval(lambda x: x.update(shape=x.shape, dtype=x.dtype))
mlir.register_lowering(cumulative_sin_p, mlir.lower_fun(_cumulative, multiple_results=False))
ad.defjvp(cumulative_sin_p, lambda t, x: jnp.cumsum(t * jnp.cos(x), axis=-1))
try:  # jax <= 0.5: shard_map's check_rep needs replication rules per primitive
    from jax.experimental.shard_map import (  # type: ignore[attr-defined]
        register_standard_check,
        register_standard_rewrite,
    )

    register_standard_check(cumulative_sin_p)
    register_standard_rewrite(cumulative_sin_p)
except ImportError:  # newer JAX: the abstract eval keeps the varying mesh axes
    pass


def uses_lower_fun_primitive(x):
    return cumulative_sin_p.bind(x) * 2.0


def jit_mix(x, y):
    return jax.jit(lambda a, b: jnp.tanh(a) @ b.T)(x, y)
