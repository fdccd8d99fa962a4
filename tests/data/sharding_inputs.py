"""Targets whose inputs only the richer --arg forms and --param express, for `jaxdiag sharding`
(tests/test_sharding.py). Each is correct under any sharding; each raises when its input did not arrive in the
form it needs, so a clean report proves the child process received that form.

    scaled       a static Python float          --arg f32[8] --arg 0.5
    noisy        a typed PRNG key               --arg key[] --arg f32[8]
    tree_total   a dict pytree                  --arg '{"w": f32[8], "b": f32[8]}'
    pair_total   a tuple pytree with a static   --arg '(f32[8], 2)'
    log_of       values from a domain           --arg f32[8]@positive
    scale_p      a primitive's bind parameter   --arg f32[8] --param factor=3.0
"""

import jax
import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive  # type: ignore[attr-defined,no-redef]

try:  # jax <= 0.5: shard_map's check_rep needs replication rules per primitive
    from jax.experimental.shard_map import register_standard_check, register_standard_rewrite
except ImportError:  # newer JAX: the avals' varying mesh axes do that job
    register_standard_check = register_standard_rewrite = None


def scaled(x, factor):
    if type(factor) is not float:
        raise TypeError(f"factor must be a static Python float, got {type(factor).__name__}")
    return x * factor


def noisy(key, x):
    if not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
        raise TypeError(f"key must be a typed PRNG key, got {key.dtype}")
    return x + jax.random.normal(key, x.shape, x.dtype)


def tree_total(params):
    if set(params) != {"w", "b"}:
        raise TypeError(f"params must be a dict with w and b, got {params!r}")
    return params["w"] * 2.0 + params["b"]


def pair_total(pair):
    x, power = pair
    if type(power) is not int:
        raise TypeError(f"the power must be a static int, got {type(power).__name__}")
    return x**power


def log_of(x):
    return jnp.log(x)


scale_p = Primitive("scale_by_factor")


def _scale(x, *, factor):
    return x * factor


scale_p.def_impl(_scale)
scale_p.def_abstract_eval(lambda x, *, factor: x.update(shape=x.shape, dtype=x.dtype))
mlir.register_lowering(scale_p, mlir.lower_fun(_scale, multiple_results=False))
ad.deflinear2(scale_p, lambda ct, x, *, factor: [ct * factor])
batching.defvectorized(scale_p)
if register_standard_check is not None:
    register_standard_check(scale_p)
    register_standard_rewrite(scale_p)
