"""A transform whose operand's shape is a function of its int bind param `L`: complex coefficients `flm` shaped
(L, 2L - 1) at real `thetas`, giving (len(thetas), 2L - 1). Its second bind param `width` is computed from `L` (no
ladder guesses it), so the primitive is reached only through `synthesis(flm, L, ...)`, jitted with `L` static and
no call of the package passing it a value. The impl computes complex output from real coefficients while the
abstract eval describes the coefficients' dtype: only complex coefficients of the right shape are inputs."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_synthesis_p = Primitive("derived_synthesis")


def _compute(flm, thetas, *, L, width):
    if flm.shape[-2:] != (L, width):
        raise ValueError(f"flm must end in ({L}, {width}), got {flm.shape}")
    ell = jnp.arange(L, dtype=thetas.dtype)
    m = jnp.arange(width, dtype=thetas.dtype) - (L - 1)
    table = jnp.exp(1j * (ell[:, None, None] * thetas[None, :, None] + 0.5 * m[None, None, :]))  # (L, T, width)
    return jnp.einsum("...lm,ltm->...tm", flm, table)


def _abstract_eval(flm, thetas, *, L, width):
    return ShapedArray(flm.shape[:-2] + (thetas.shape[-1], width), flm.dtype)


def _jvp(primals, tangents, *, L, width):
    tangents = [jnp.zeros_like(p) if type(t) is ad.Zero else t for p, t in zip(primals, tangents)]
    return jax.jvp(functools.partial(_compute, L=L, width=width), tuple(primals), tuple(tangents))


def _batching(args, dims, *, L, width):
    axes = tuple(d if isinstance(d, int) else None for d in dims)
    return jax.vmap(functools.partial(_compute, L=L, width=width), in_axes=axes)(*args), 0


_synthesis_p.def_impl(_compute)
_synthesis_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(_synthesis_p, mlir.lower_fun(_compute, multiple_results=False))
ad.primitive_jvps[_synthesis_p] = _jvp
batching.primitive_batchers[_synthesis_p] = _batching


def _thetas(L, sampling):
    count = L if sampling == "mw" else L + 1
    return ((np.arange(count) + 0.5) * np.pi / count).astype(np.float32)


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def synthesis(flm, L: int, spin: int = 0, sampling: str = "mw"):
    """The signal of the coefficients `flm`, shaped (L, 2L - 1), on the sampling's rings."""
    if abs(spin) >= L:
        raise ValueError(f"spin {spin} needs L > {abs(spin)}")
    return _synthesis_p.bind(flm, jnp.asarray(_thetas(L, sampling)), L=L, width=2 * L - 1)
