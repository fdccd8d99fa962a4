"""JXR002 bad: no abstract evaluation rule. Eager calls and eager vmap work (the impl and the batching rule never
need shapes), so eager-only tests pass; `jax.jit`, `jax.grad` and `jax.make_jaxpr` fail with
`NotImplementedError: Abstract evaluation for 'softplus' not implemented`."""

import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"softplus_p": {"args": ["f32[4,3]"]}}

softplus_p = Primitive("softplus")  # jaxdiag-expect: JXR002


def _softplus_impl(x):
    return jnp.logaddexp(x, jnp.zeros_like(x))


def _softplus_batching(batched_args, batch_dims):
    (x,), (bx,) = batched_args, batch_dims
    return softplus_p.bind(x), bx


softplus_p.def_impl(_softplus_impl)
# missing: softplus_p.def_abstract_eval(...)
batching.primitive_batchers[softplus_p] = _softplus_batching
mlir.register_lowering(softplus_p, mlir.lower_fun(_softplus_impl, multiple_results=False))
