"""Real signatures for tests/test_inputs_signatures.py: static floats in nondiff_argnums (the JAX docs'
clip_gradient), a pytree-argument custom_vjp, a PRNG-key argument, partials, bound methods, zero-argument
functions, jit static_argnums."""
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x  # identity function


def clip_gradient_fwd(lo, hi, x):
    return x, None  # no residual values to save


def clip_gradient_bwd(lo, hi, _, g):  # jaxdiag: ignore[JXG014]  (clipping the gradient is the point)
    return (jnp.clip(g, lo, hi),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)


@jax.custom_vjp
def dense(params, x):
    return jnp.tanh(params["w"] @ x + params["b"])


def dense_fwd(params, x):
    y = jnp.tanh(params["w"] @ x + params["b"])
    return y, (params, x, y)


def dense_bwd(res, g):
    params, x, y = res
    gz = g * (1 - y**2)
    return {"w": jnp.outer(gz, x), "b": gz}, params["w"].T @ gz


dense.defvjp(dense_fwd, dense_bwd)


@jax.custom_vjp
def dense_bad(params, x):
    return jnp.tanh(params["w"] @ x + params["b"])


def dense_bad_fwd(params, x):
    y = jnp.tanh(params["w"] @ x + params["b"])
    return y, (params, x, y)


def dense_bad_bwd(res, g):  # jaxdiag-expect: JXG
    params, x, y = res
    gz = g * (1 - y**2)
    return {"w": jnp.outer(gz, x), "b": 2 * gz}, params["w"].T @ gz  # wrong: the bias cotangent is doubled


dense_bad.defvjp(dense_bad_fwd, dense_bad_bwd)


@jax.custom_jvp
def noisy_relu(key, x):
    return jnp.maximum(x, 0) + 0.01 * jax.random.normal(key, x.shape)


@noisy_relu.defjvp
def noisy_relu_jvp(primals, tangents):
    key, x = primals
    _, t = tangents
    return noisy_relu(key, x), jnp.where(x > 0, t, 0.0)


def dropout(key, x):
    keep = jax.random.bernoulli(key, 0.5, x.shape)
    return jnp.where(keep, 2 * x, 0.0)


def scale(x, factor):
    return x * factor


scale_by_3 = partial(scale, factor=3.0)


class Layer:
    def __init__(self, w):
        self.w = w

    def apply(self, x):
        return jnp.sin(x) * self.w


bound_apply = Layer(2.0).apply


def ones():
    return jnp.ones(3)


@partial(jax.jit, static_argnums=(1,))
def power(x, n):
    return x**n


@partial(jax.jit, static_argnums=(1,))
def rescale(x, factor):
    return x * factor
