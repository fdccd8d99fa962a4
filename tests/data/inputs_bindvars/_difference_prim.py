"""A finite-difference primitive of order `order` along the last axis: (..., n) -> (..., n - order), defined only
for n > order. Its public wrapper binds its own `order: int` parameter, and nothing in the package calls it with a
literal: only a synthesised `order` can check it."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_difference_p = Primitive("bindvars_difference")


def _impl(x, *, order):
    return jnp.diff(x, n=order, axis=-1)


def _abstract_eval(x, *, order):
    if x.ndim == 0 or x.shape[-1] <= order:
        raise ValueError(f"a difference of order {order} needs more than {order} samples, got shape {x.shape}")
    return ShapedArray(x.shape[:-1] + (x.shape[-1] - order,), x.dtype)


def _jvp(primals, tangents, *, order):
    (x,), (t,) = primals, tangents
    return _difference_p.bind(x, order=order), _difference_p.bind(t, order=order)


def _transpose(ct, x, *, order):
    widths = [(0, 0)] * (ct.ndim - 1)
    for _ in range(order):  # the adjoint of one difference: a_j = y_(j-1) - y_j, zero beyond the ends
        ct = jnp.pad(ct, widths + [(1, 0)]) - jnp.pad(ct, widths + [(0, 1)])
    return [ct]


def _batching(batched_args, batch_dims, *, order):
    (x,), (d,) = batched_args, batch_dims
    return _difference_p.bind(jnp.moveaxis(x, d, 0), order=order), 0


_difference_p.def_impl(_impl)
_difference_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(_difference_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[_difference_p] = _jvp
ad.primitive_transposes[_difference_p] = _transpose
batching.primitive_batchers[_difference_p] = _batching


def difference(x, order: int):
    return _difference_p.bind(x, order=order)
