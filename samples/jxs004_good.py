"""JXS004 good: the abstract eval derives its output from the input aval (`x.update(...)`), which keeps the
input's varying mesh axes on newer JAX; on jax 0.5, where shard_map checks replication with per-primitive rules,
the primitive registers the standard ones."""

import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

try:  # jax <= 0.5: shard_map's check_rep needs replication rules per primitive
    from jax.experimental.shard_map import register_standard_check, register_standard_rewrite
except ImportError:  # newer JAX: the avals' varying mesh axes do that job
    register_standard_check = register_standard_rewrite = None

JAXDIAG = {"soft_sign_p": {"args": ["f32[4]"]}}

soft_sign_p = Primitive("soft_sign")


def _soft_sign(x):
    return x / (1.0 + jnp.abs(x))


def _soft_sign_abstract_eval(x):
    return x.update(shape=x.shape, dtype=x.dtype)


soft_sign_p.def_impl(_soft_sign)
soft_sign_p.def_abstract_eval(_soft_sign_abstract_eval)
mlir.register_lowering(soft_sign_p, mlir.lower_fun(_soft_sign, multiple_results=False))
ad.defjvp(soft_sign_p, lambda t, x: t / (1.0 + jnp.abs(x)) ** 2)
batching.defvectorized(soft_sign_p)
if register_standard_check is not None:
    register_standard_check(soft_sign_p)
    register_standard_rewrite(soft_sign_p)
