"""A primitive that integrates by quadrature: `n_nodes` (required, bound from its wrapper's own parameter, no
value anywhere) is a resolution, not a size: it sets no output shape, and its values converge as it grows. The JVP
rule is the exact derivative of the integral, so at a coarse `n_nodes` the impl's own finite differences disagree
with it by the quadrature's error: inputs no caller passes. The synthesised value is doubled until the output
stops changing."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_mean_exp_p = Primitive("bindvars_mean_exp")


def _impl(x, *, n_nodes):
    """The mean of exp(x t) over t in [0, 1], by the midpoint rule on `n_nodes` nodes."""
    t = (jnp.arange(n_nodes, dtype=x.dtype) + 0.5) / n_nodes
    return jnp.mean(jnp.exp(x[..., None] * t), axis=-1)


def _abstract_eval(x, *, n_nodes):
    return ShapedArray(x.shape, x.dtype)


def _exact_slope(x):
    """d/dx of (e^x - 1) / x, the integral's closed form (its series near 0)."""
    small = jnp.abs(x) < 1e-2
    safe = jnp.where(small, 1.0, x)
    return jnp.where(small, 0.5 + x / 3.0, (safe * jnp.exp(safe) - jnp.exp(safe) + 1.0) / (safe * safe))


def _jvp(primals, tangents, *, n_nodes):
    (x,), (t,) = primals, tangents
    return _mean_exp_p.bind(x, n_nodes=n_nodes), _exact_slope(x) * t


_mean_exp_p.def_impl(_impl)
_mean_exp_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(_mean_exp_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[_mean_exp_p] = _jvp
batching.defvectorized(_mean_exp_p)


def mean_exp(x, n_nodes):
    return _mean_exp_p.bind(x, n_nodes=n_nodes)
