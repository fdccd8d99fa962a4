"""An analysis primitive whose bandlimit `L` sets its output shape: samples (..., 2L-1) -> coefficients (..., L).

Its impl and abstract eval require `L` and `sampling` as keywords, and the library binds them from the keyword-only
arguments of `analyse`, whose only caller (`harmonic.forward`) passes its own parameters on, defaulting to
`L=2, sampling="mw"`: no literal at the bind site."""

import numpy as np
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_WEIGHTS = {"mw": 1.0, "dh": 0.5}

_analysis_p = Primitive("bindvars_analysis")


def _impl(x, *, L, sampling):
    idx = np.arange(L)
    return _WEIGHTS[sampling] * (x[..., L - 1 + idx] + x[..., L - 1 - idx])


def _abstract_eval(x, *, L, sampling):
    if x.shape[-1:] != (2 * L - 1,):
        raise ValueError(f"expected {2 * L - 1} samples for L={L}, got shape {x.shape}")
    return ShapedArray(x.shape[:-1] + (L,), x.dtype)


def _jvp(primals, tangents, *, L, sampling):
    (x,), (t,) = primals, tangents
    return _analysis_p.bind(x, L=L, sampling=sampling), _analysis_p.bind(t, L=L, sampling=sampling)


def _transpose(ct, x, *, L, sampling):
    idx = np.arange(L)
    out = jnp.zeros(ct.shape[:-1] + (2 * L - 1,), ct.dtype)
    return [_WEIGHTS[sampling] * out.at[..., L - 1 + idx].add(ct).at[..., L - 1 - idx].add(ct)]


def _batching(batched_args, batch_dims, *, L, sampling):
    (x,), (d,) = batched_args, batch_dims
    x = jnp.moveaxis(x, d, 0)
    return _analysis_p.bind(x, L=L, sampling=sampling), 0


_analysis_p.def_impl(_impl)
_analysis_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(_analysis_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[_analysis_p] = _jvp
ad.primitive_transposes[_analysis_p] = _transpose
batching.primitive_batchers[_analysis_p] = _batching


def analyse(x, *, L, sampling):
    """Coefficients of the samples `x` at bandlimit `L`."""
    return _analysis_p.bind(x, L=L, sampling=sampling)
