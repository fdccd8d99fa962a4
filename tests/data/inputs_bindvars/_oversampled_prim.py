"""A forward transform and its adjoint, each a primitive carrying its own oversampling and its adjoint's
(`oversample`, `oversample_adjoint`: a non-uniform FFT's pair of grids). No call of the package passes either a
value: the public wrapper splits its argument with a helper, the impl hands `oversample` to the package's `resample`
(whose default is the value), and the transposes bind the other primitive with the two swapped, so
`oversample_adjoint` takes the values `oversample` does."""

import numpy as np
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_forward_p = Primitive("bindvars_oversampled_forward")
_adjoint_p = Primitive("bindvars_oversampled_adjoint")


def _split(oversample):
    """(forward, adjoint) oversampling from one factor or a pair."""
    if isinstance(oversample, (tuple, list)):
        return float(oversample[0]), float(oversample[1])
    return float(oversample), float(oversample)


def resample(x, oversample=2.0, adjoint=False):
    """The transform on a grid `oversample` times finer, read back at the samples: the same values at any factor."""
    n = x.shape[-1]
    fine = n * oversample
    basis = np.cos(2 * np.pi * np.outer(np.arange(n), np.arange(n)) * oversample / fine).astype(np.float32)
    return x @ (basis.T if adjoint else basis) + 0.5 * x


def forward(x, oversample=2.0):
    over, over_adjoint = _split(oversample)
    return _forward_p.bind(x, oversample=over, oversample_adjoint=over_adjoint)


def _forward_impl(x, *, oversample, oversample_adjoint):
    return resample(x, oversample=oversample)


def _adjoint_impl(x, *, oversample, oversample_adjoint):
    return resample(x, oversample=oversample, adjoint=True)


def _shaped(x, *, oversample, oversample_adjoint):
    return ShapedArray(x.shape, x.dtype)


def _forward_transpose(ct, x, *, oversample, oversample_adjoint):
    return [_adjoint_p.bind(ct, oversample=oversample_adjoint, oversample_adjoint=oversample)]


def _adjoint_transpose(ct, x, *, oversample, oversample_adjoint):
    return [_forward_p.bind(ct, oversample=oversample_adjoint, oversample_adjoint=oversample)]


def _batching(prim):
    def rule(batched_args, batch_dims, **params):
        (x,), (d,) = batched_args, batch_dims
        return prim.bind(jnp.moveaxis(x, d, 0), **params), 0

    return rule


for _prim, _impl, _transpose in ((_forward_p, _forward_impl, _forward_transpose),
                                 (_adjoint_p, _adjoint_impl, _adjoint_transpose)):
    _prim.def_impl(_impl)
    _prim.def_abstract_eval(_shaped)
    mlir.register_lowering(_prim, mlir.lower_fun(_impl, multiple_results=False))
    ad.deflinear2(_prim, _transpose)
    batching.primitive_batchers[_prim] = _batching(_prim)
