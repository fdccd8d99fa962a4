"""JXB014 bad: the batching rule refuses batched operands with its own `raise`: `jax.vmap` fails with the rule's
message for every caller. Deliberate here (the author says so in the message), so a warning, not an error."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"checksum_p": {"args": ["f32[4]"]}}

checksum_p = Primitive("checksum")


def _checksum_impl(x):
    return jnp.sum(x * jnp.arange(1, x.shape[0] + 1, dtype=x.dtype))


def _checksum_abstract_eval(x):
    return ShapedArray((), x.dtype)


def _checksum_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    if bx is None:
        return checksum_p.bind(x), None
    raise ValueError("checksum cannot be vmapped: call it once per array")  # jaxdiag-expect: JXB014


checksum_p.def_impl(_checksum_impl)
checksum_p.def_abstract_eval(_checksum_abstract_eval)
batching.primitive_batchers[checksum_p] = _checksum_batching
mlir.register_lowering(checksum_p, mlir.lower_fun(_checksum_impl, multiple_results=False))
