"""A primitive with a required `L` bind param, bound by public wrappers taking `L: int` (positionally, and as a
keyword-only argument): `range(L)` and `L` in the operand's shape. Its second bind param, `width`, is computed from
`L` (no ladder can guess it): the primitive is only reached by running a wrapper with an int `L`."""

import jax.numpy as jnp
import numpy as np
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_forward_p = Primitive("intparams_forward")


def _weights(L, width):
    return np.cos(np.outer(np.arange(L), np.arange(width) - (width - 1) / 2)).astype(np.float32)


def _impl(f, *, L, width):
    return jnp.sum(f * _weights(L, width), axis=-1)


def _abstract_eval(f, *, L, width):
    if f.shape[-2:] != (L, width):
        raise ValueError(f"expected (..., {L}, {width}), got {f.shape}")
    return ShapedArray(f.shape[:-1], f.dtype)


def _jvp(primals, tangents, *, L, width):
    (f,), (t,) = primals, tangents
    return _forward_p.bind(f, L=L, width=width), _forward_p.bind(t, L=L, width=width)


def _transpose(ct, f, *, L, width):
    return [ct[..., None] * _weights(L, width)]


def _batching(batched_args, batch_dims, *, L, width):
    (f,), (d,) = batched_args, batch_dims
    return _forward_p.bind(jnp.moveaxis(f, d, 0), L=L, width=width), 0


_forward_p.def_impl(_impl)
_forward_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(_forward_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[_forward_p] = _jvp
ad.primitive_transposes[_forward_p] = _transpose
batching.primitive_batchers[_forward_p] = _batching


def forward(f: jnp.ndarray, L: int, spin: int = 0, sampling: str = "mw", reality: bool = False):
    """The transform of `f`, shaped (L, 2L - 1)."""
    if sampling != "mw":
        raise ValueError(sampling)
    rows = [ell for ell in range(L) if ell >= abs(spin)]
    if len(rows) != L or f.shape[-2:] != (L, 2 * L - 1):
        raise ValueError(f"f must be shaped ({L}, {2 * L - 1}), got {f.shape}")
    return _forward_p.bind(f, L=L, width=2 * L - 1)
