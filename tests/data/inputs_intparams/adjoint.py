"""A primitive bound by a public wrapper whose `L: int` is keyword-only and which no call of the package passes a
literal: the wrapper is run with `L` from the int ladder."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_spread_p = Primitive("intparams_spread")


def _impl(g, *, L, width):
    return jnp.broadcast_to(g[..., None], g.shape + (width,)) / width


def _abstract_eval(g, *, L, width):
    if g.ndim == 0 or g.shape[-1] != L:
        raise ValueError(f"expected (..., {L}), got {g.shape}")
    return ShapedArray(g.shape + (width,), g.dtype)


def _jvp(primals, tangents, *, L, width):
    (g,), (t,) = primals, tangents
    return _spread_p.bind(g, L=L, width=width), _spread_p.bind(t, L=L, width=width)


def _transpose(ct, g, *, L, width):
    return [jnp.sum(ct, axis=-1) / width]


def _batching(batched_args, batch_dims, *, L, width):
    (g,), (d,) = batched_args, batch_dims
    return _spread_p.bind(jnp.moveaxis(g, d, 0), L=L, width=width), 0


_spread_p.def_impl(_impl)
_spread_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(_spread_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[_spread_p] = _jvp
ad.primitive_transposes[_spread_p] = _transpose
batching.primitive_batchers[_spread_p] = _batching


def spread(g: jnp.ndarray, *, L: int, sampling: str = "mw"):
    if g.shape[-1] != L:
        raise ValueError(f"g must end in {L}, got {g.shape}")
    return _spread_p.bind(g, L=L, width=2 * L - 1)
