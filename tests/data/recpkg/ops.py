from functools import partial

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

# A primitive whose rules need a bind param: `jaxdiag check` cannot guess `width`; a recording can.
pad_p = Primitive("recpkg_pad")


def _pad_impl(x, *, width):
    return jnp.pad(x, (0, width))


def _pad_abstract(x, *, width):
    return jax.core.ShapedArray((x.shape[0] + width,), x.dtype)


def _pad_batch(args, dims, *, width):
    (x,), (d,) = args, dims
    x = jnp.moveaxis(x, d, 0)
    return jnp.pad(x, ((0, 0), (0, width))), 0


pad_p.def_impl(_pad_impl)
pad_p.def_abstract_eval(_pad_abstract)
batching.primitive_batchers[pad_p] = _pad_batch
mlir.register_lowering(pad_p, mlir.lower_fun(_pad_impl, multiple_results=False))
ad.deflinear2(pad_p, lambda ct, x, *, width: [ct[: ct.shape[0] - width]])


def pad(x, width):
    return pad_p.bind(x, width=width)


def make_scaled_log(scale):
    """A factory: the custom_jvp it returns is a closure that no module attribute holds."""

    @jax.custom_jvp
    def scaled_log(x):
        return scale * jnp.log(-x)

    @scaled_log.defjvp
    def scaled_log_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return scaled_log(x), scale * t / x

    return scaled_log


def neg_log_sum(x):
    """Only ever called on negative inputs (log(-x))."""
    return make_scaled_log(2.0)(x).sum()


@jax.custom_vjp
def dense(params, x):
    return jnp.tanh(params["w"] @ x + params["b"])


def _dense_fwd(params, x):
    y = jnp.tanh(params["w"] @ x + params["b"])
    return y, (params, x, y)


def _dense_bwd(res, g):
    params, x, y = res
    gz = g * (1 - y**2)
    return {"w": jnp.outer(gz, x), "b": gz}, params["w"].T @ gz


dense.defvjp(_dense_fwd, _dense_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


def _clip_fwd(lo, hi, x):
    return x, None


def _clip_bwd(lo, hi, _, g):  # jaxdiag: ignore[JXG014]
    return (jnp.clip(g, lo, hi),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


