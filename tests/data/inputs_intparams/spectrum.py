"""A primitive named as its public wrapper, `spectrum`, whose impl takes `spin` as an operand and the rest as
`**params`; the wrapper's caller passes its own `spin=` by keyword. That keyword is the wrapper's argument, never a
bind param (read as one, it collides with the operand: "got multiple values for argument 'spin'")."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

_spectrum_p = Primitive("spectrum")


def _impl(x, spin, *, L, **params):
    return x * (L + spin)


def _abstract_eval(x, spin, *, L, **params):
    return ShapedArray(x.shape, x.dtype)


def _jvp(primals, tangents, *, L, **params):
    (x, spin), (tx, ts) = primals, tangents
    tx = jnp.zeros_like(x) if type(tx).__name__ == "Zero" else tx
    ts = jnp.zeros_like(spin) if type(ts).__name__ == "Zero" else ts
    return _spectrum_p.bind(x, spin, L=L, **params), tx * (L + spin) + x * ts


_spectrum_p.def_impl(_impl)
_spectrum_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(_spectrum_p, mlir.lower_fun(_impl, multiple_results=False))
batching.defbroadcasting(_spectrum_p)


def _register_jvp():
    from jax.interpreters import ad

    ad.primitive_jvps[_spectrum_p] = _jvp


_register_jvp()


def spectrum(x: jnp.ndarray, *, L: int, spin: int = 0):
    return _spectrum_p.bind(x, jnp.full_like(x, spin), L=L)


def analyse(x: jnp.ndarray, L: int, spin: int = 0):
    return spectrum(x, L=L, spin=spin)
