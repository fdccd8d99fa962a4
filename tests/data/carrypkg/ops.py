"""Correct rules whose recorded calls carry a callable bind param and a static dtype argument."""

from functools import partial

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

apply_p = Primitive("apply_elementwise")


def _apply_impl(x, *, fn):  # the rule jaxdiag reaches only through the recording's carrier function
    return fn(x)


def _apply_abstract(x, *, fn):
    return jax.core.ShapedArray(x.shape, x.dtype)


def _apply_jvp(primals, tangents, *, fn):
    (x,), (t,) = primals, tangents
    t = ad.instantiate_zeros(t)
    return apply_p.bind(x, fn=fn), jax.jvp(fn, (x,), (t,))[1]


def _apply_batch(args, dims, *, fn):
    return apply_p.bind(args[0], fn=fn), dims[0]


apply_p.def_impl(_apply_impl)
apply_p.def_abstract_eval(_apply_abstract)
ad.primitive_jvps[apply_p] = _apply_jvp
batching.primitive_batchers[apply_p] = _apply_batch
mlir.register_lowering(apply_p, mlir.lower_fun(_apply_impl, multiple_results=False))


def apply(fn, x):
    """`fn` applied elementwise: a callable argument, so `apply` itself cannot carry the recorded call."""
    return apply_p.bind(x, fn=fn)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def round_trip(dtype, x):  # a dtype as a static argument, given as a scalar type (jnp.bfloat16)
    return x.astype(dtype).astype(x.dtype)


def _round_trip_fwd(dtype, x):
    return x.astype(dtype).astype(x.dtype), None


def _round_trip_bwd(dtype, _, g):
    return (g,)  # straight-through


round_trip.defvjp(_round_trip_fwd, _round_trip_bwd)


