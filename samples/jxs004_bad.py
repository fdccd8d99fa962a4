"""JXS004 bad: a primitive whose abstract eval builds a fresh `ShapedArray(shape, dtype)`.

Inside `shard_map` that output is typed as identical on every device. On newer JAX (varying mesh axes, `vma`),
JAX casts it back and `jax.grad` through the shard_map raises `pvary is a invariant->variant collective`; on
jax 0.5, shard_map itself raises `No replication rule for soft_sign`.
"""

import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive
from jax.core import ShapedArray

JAXDIAG = {"soft_sign_p": {"args": ["f32[4]"]}}

soft_sign_p = Primitive("soft_sign")  # jaxdiag-expect: JXS004 (jax 0.5: no replication rules)


def _soft_sign(x):
    return x / (1.0 + jnp.abs(x))


def _soft_sign_abstract_eval(x):  # jaxdiag-expect: JXS004 (newer JAX: varying axes dropped)
    return ShapedArray(x.shape, x.dtype)


soft_sign_p.def_impl(_soft_sign)
soft_sign_p.def_abstract_eval(_soft_sign_abstract_eval)
mlir.register_lowering(soft_sign_p, mlir.lower_fun(_soft_sign, multiple_results=False))
ad.defjvp(soft_sign_p, lambda t, x: t / (1.0 + jnp.abs(x)) ** 2)
batching.defvectorized(soft_sign_p)
