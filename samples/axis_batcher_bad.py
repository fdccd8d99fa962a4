"""An `axis_primitive_batchers` rule (called as `rule(axis_size, axis_name, trace_type, batched_args, batch_dims,
**params)`) that forgets to broadcast the scale to the row: `s` of shape (batch,) multiplies the last axis of x
(batch, n), which only works when n equals the batch size and is wrong otherwise (JXB005 or JXB006); found with
the convention JAX uses for this registry."""

from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"rowscale_p": {"args": ["f32[3]", "f32[]"]}}

rowscale_p = Primitive("rowscale_axis_rule_bad")  # jaxdiag-expect: JXB013


def _rowscale_impl(x, s):
    return x * s / x.shape[-1]


def _rowscale_abstract_eval(x, s):
    return ShapedArray(x.shape, x.dtype)


def _rowscale_batching(axis_size, axis_name, trace_type, batched_args, batch_dims, **params):
    (x, s), (bx, bs) = batched_args, batch_dims
    x = batching.bdim_at_front(x, bx, axis_size)
    s = batching.bdim_at_front(s, bs, axis_size)
    return rowscale_p.bind(x, s), 0  # s is (batch,): broadcasts against the row axis  # jaxdiag-expect: JXB006


rowscale_p.def_impl(_rowscale_impl)
rowscale_p.def_abstract_eval(_rowscale_abstract_eval)
mlir.register_lowering(rowscale_p, mlir.lower_fun(_rowscale_impl, multiple_results=False))
batching.axis_primitive_batchers[rowscale_p] = _rowscale_batching
