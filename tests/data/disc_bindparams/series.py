"""A primitive whose impl defaults `order`, while its JVP and batching rules require it: the library's own bind
call always passes it, from a module-level setting when the caller gives none."""

import math

from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_DEFAULT_ORDER = 4
_current_order = _DEFAULT_ORDER

series_p = Primitive("disc_exp_series")


def _impl(x, order=None):
    order = _DEFAULT_ORDER if order is None else order
    return sum(x ** n / math.factorial(n) for n in range(order + 1))


def _abstract_eval(x, order=None):
    return ShapedArray(x.shape, x.dtype)


def _jvp(primals, tangents, *, order):
    (x,), (t,) = primals, tangents
    return series_p.bind(x, order=order), series_p.bind(x, order=order - 1) * t


def _batching(batched_args, batch_dims, *, order):
    (x,), (d,) = batched_args, batch_dims
    return series_p.bind(x, order=order), d


series_p.def_impl(_impl)
series_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(series_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[series_p] = _jvp
batching.primitive_batchers[series_p] = _batching


def exp_series(x, order=None):
    if order is None:
        order = _current_order
    return series_p.bind(x, order=order)
