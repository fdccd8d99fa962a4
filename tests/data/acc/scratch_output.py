"""A kernel that returns its result and a scratch buffer, as bindings of compiled solvers do (the buffer is what
their reverse pass needs). Its JVP gives the buffer no tangent: `lowrank_diag` drops the buffer, so every derivative
it takes is right; `lowrank_diag_and_scratch` hands the buffer back to its callers, where the zero tangent is wrong
(the buffer depends on both inputs)."""

import jax
import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive


def _factor(a, u):  # a [..., N], u [..., N, J]
    d = a + jnp.sum(u * u, axis=-1)
    return d, u * d[..., None]


def _abstract(a, u):
    return jax.core.ShapedArray(a.shape, a.dtype), jax.core.ShapedArray(u.shape, u.dtype)


def _jvp(primals, tangents):
    a, u = primals
    ta, tu = (ad.instantiate_zeros(t) for t in tangents)
    d, scratch = factor_p.bind(a, u)
    return (d, scratch), (ta + 2.0 * jnp.sum(u * tu, axis=-1), jnp.zeros_like(scratch))


def _batch(args, dims):  # the kernel takes leading batch axes
    size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
    a, u = (jnp.moveaxis(x, d, 0) if d is not None else jnp.broadcast_to(x, (size, *x.shape))
            for x, d in zip(args, dims))
    return factor_p.bind(a, u), (0, 0)


factor_p = Primitive("lowrank_factor")
factor_p.multiple_results = True
factor_p.def_impl(_factor)
factor_p.def_abstract_eval(_abstract)
mlir.register_lowering(factor_p, mlir.lower_fun(_factor, multiple_results=True))
ad.primitive_jvps[factor_p] = _jvp
batching.primitive_batchers[factor_p] = _batch


def lowrank_diag(a, u):
    d, _ = factor_p.bind(a, u)
    return d


def lowrank_diag_and_scratch(a, u):
    d, scratch = factor_p.bind(a, u)
    return d, scratch
