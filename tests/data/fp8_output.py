"""A custom_vjp with a float8 output (flax's `fp8_ops.in_q`): float8 is a floating dtype to JAX, so its cotangent
is float8 too (not float0), and `jax.jit(jax.grad(...))` through it works."""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def quantize(q_dtype, x, scale):
    return (x / scale).astype(q_dtype), scale * 2.0


def quantize_fwd(q_dtype, x, scale):
    return quantize(q_dtype, x, scale), scale


def quantize_bwd(q_dtype, res, _):
    return None, res  # no gradient for x; the scale's cotangent is passed through, as flax does


quantize.defvjp(quantize_fwd, quantize_bwd)


def quantize_e4m3(x, scale):
    return quantize(jnp.float8_e4m3fn, x, scale)
