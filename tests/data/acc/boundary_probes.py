"""Probe modules for the derivative-boundary check (tests/test_acc_items.py): each `_bad` rule turns a symbolic
zero into a dense zero and multiplies it by a partial derivative that is infinite at 0; each `_good` keeps it
symbolic."""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


# --- custom_vjp with two outputs: the unused output's cotangent meets 0.5 / sqrt(x) at x = 0 -----------------
@jax.custom_vjp
def root_and_id_bad(x):
    return jnp.sqrt(x), 2.0 * x


def _fwd(x):
    return root_and_id_bad(x), x


def _bwd_bad(x, cts):
    ct_root, ct_id = cts
    return (ct_root * 0.5 / jnp.sqrt(x) + 2.0 * ct_id,)


root_and_id_bad.defvjp(_fwd, _bwd_bad)


@jax.custom_vjp
def root_and_id_good(x):
    return jnp.sqrt(x), 2.0 * x


def _fwd_good(x):
    return root_and_id_good(x), x


def _bwd_good(x, cts):
    ct_root, ct_id = cts
    safe = jnp.where(ct_root == 0, 0.0, ct_root * 0.5 / jnp.sqrt(jnp.where(ct_root == 0, 1.0, x)))
    return (safe + 2.0 * ct_id,)


root_and_id_good.defvjp(_fwd_good, _bwd_good)


# --- a primitive whose JVP rule instantiates ad.Zero tangents: x * sqrt(y) ---------------------------------
def _make(name, keep_symbolic):
    prim = Primitive(name)

    def impl(x, y):
        return x * jnp.sqrt(y)

    def abstract(x, y):
        return ShapedArray(x.shape, x.dtype)

    def jvp(primals, tangents):
        (x, y), (tx, ty) = primals, tangents
        s = jnp.sqrt(y)
        if keep_symbolic:
            out = jnp.zeros_like(s)
            if type(tx) is not ad.Zero:
                out = out + tx * s
            if type(ty) is not ad.Zero:
                out = out + ty * x / (2.0 * s)
            return prim.bind(x, y), out
        tx, ty = ad.instantiate_zeros(tx), ad.instantiate_zeros(ty)
        return prim.bind(x, y), tx * s + ty * x / (2.0 * s)

    prim.def_impl(impl)
    prim.def_abstract_eval(abstract)
    mlir.register_lowering(prim, mlir.lower_fun(impl, multiple_results=False))
    batching.defbroadcasting(prim)
    ad.primitive_jvps[prim] = jvp
    return prim


xsqrty_bad_p = _make("xsqrty_dense_zero", keep_symbolic=False)
xsqrty_good_p = _make("xsqrty_symbolic_zero", keep_symbolic=True)
