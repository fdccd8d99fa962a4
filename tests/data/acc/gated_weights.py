"""A fused kernel that batches its data but never its weights, the pattern of a gated projection's backward kernel
whose batching rule raises "has no batch axis for this input" for a batched weight or bias, and wants the cotangent
and the input batched together: every variant the pairwise covering draws batches a weight or splits the two, so
every call was refused. `gated_p`'s rule batches `(g, x)` correctly: what it refuses is its contract (a note).
`closed_p` refuses every batched call: vmap of it always fails (JXB014)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir


def _impl(g, x, w1, w2, b):
    return g * jnp.tanh(x * w1) * w2 + b


def _abstract(g, x, w1, w2, b):
    return ShapedArray(x.shape, x.dtype)


def _gated_rule(args, dims):
    g, x, w1, w2, b = args
    dg, dx, *dws = dims
    if any(d is not None for d in dws):
        raise ValueError("the weights and bias have no batch axis for this input")
    if dg is None or dx is None:
        raise ValueError("g and x cannot be batched apart: batch both")
    return gated_p.bind(jnp.moveaxis(g, dg, 0), jnp.moveaxis(x, dx, 0), w1, w2, b), 0


def _closed_rule(args, dims):
    raise ValueError("closed cannot be vmapped: call it once per example")


def _primitive(name, rule):
    prim = Primitive(name)
    prim.def_impl(_impl)
    prim.def_abstract_eval(_abstract)
    mlir.register_lowering(prim, mlir.lower_fun(_impl, multiple_results=False))
    batching.primitive_batchers[prim] = rule
    return prim


gated_p = _primitive("gated", _gated_rule)
closed_p = _primitive("closed", _closed_rule)
