"""Transforms of complex coefficients at real points, bound as NUFFT libraries bind them: the abstract eval says
the output has the coefficients' dtype and the impl computes complex values from any input. On real coefficients
the two disagree (and `jax.jit` fails to lower): outside the contract, which the public wrapper's callers meet with
complex data. The bind params come from the wrapper at run time (`int(n_modes)`, a factor it splits), so no literal
gives them: they are read where the wrapper binds it, and the operands are then chosen by the primitive's own
inference.
`fixed_dtype_sum_p`'s abstract eval says float32 whatever the input: wrong on every input, complex ones too."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from functools import partial

from jax.interpreters import ad, batching, mlir


def _phases(x, n_modes):
    k = jnp.arange(n_modes, dtype=x.dtype)
    return jnp.exp(1j * k[:, None] * x[None, :])


def _impl(x, c, *, n_modes, weight):
    return weight * jnp.sum(c[None, :] * _phases(x, n_modes), axis=1)


def _jvp(primals, tangents, *, n_modes, weight):
    (x, c), (dx, dc) = primals, tangents
    out = _impl(x, c, n_modes=n_modes, weight=weight)
    k = jnp.arange(n_modes, dtype=x.dtype)
    dx = ad.instantiate_zeros(dx)
    dc = ad.instantiate_zeros(dc)
    tangent = jnp.sum(dc[None, :] * _phases(x, n_modes), axis=1) + jnp.sum(
        c[None, :] * 1j * k[:, None] * dx[None, :] * _phases(x, n_modes), axis=1)
    return out, weight * tangent


def _batch(args, dims, **params):
    return jax.vmap(partial(_impl, **params), in_axes=dims)(*args), 0


phase_sum_p = Primitive("phase_sum")
phase_sum_p.def_impl(_impl)
phase_sum_p.def_abstract_eval(lambda x, c, *, n_modes, weight: jax.core.ShapedArray((n_modes,), c.dtype))
mlir.register_lowering(phase_sum_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[phase_sum_p] = _jvp
batching.primitive_batchers[phase_sum_p] = _batch

fixed_dtype_sum_p = Primitive("fixed_dtype_sum")
fixed_dtype_sum_p.def_impl(_impl)
fixed_dtype_sum_p.def_abstract_eval(lambda x, c, *, n_modes, weight: jax.core.ShapedArray((n_modes,), jnp.float32))
mlir.register_lowering(fixed_dtype_sum_p, mlir.lower_fun(_impl, multiple_results=False))


def _split(weights):
    return (weights, weights) if not isinstance(weights, tuple) else weights


def phase_sum(x, c, n_modes: int, weights=0.5):
    return phase_sum_p.bind(x, c, n_modes=int(n_modes), weight=_split(weights)[0])


def fixed_dtype_sum(x, c, n_modes: int, weights=0.5):
    return fixed_dtype_sum_p.bind(x, c, n_modes=int(n_modes), weight=_split(weights)[0])
