"""bwds that are right and must not be called non-linear in the cotangent (JXG036): a deliberately clipped gradient
(non-linear, but zero at a zero cotangent), a gradient reversal, and a two-output rule whose bwd uses both
cotangents. And one that is wrong: a term computed from the residuals alone."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_gradient(x):
    return x


def _clip_fwd(x):
    return x, None


def _clip_bwd(_, g):
    return (jnp.clip(g, -1.0, 1.0),)


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


@jax.custom_vjp
def reverse_gradient(x):
    return x


def _reverse_fwd(x):
    return x, None


def _reverse_bwd(_, g):
    return (-g,)


reverse_gradient.defvjp(_reverse_fwd, _reverse_bwd)


@jax.custom_vjp
def sin_cos(x):
    return jnp.sin(x), jnp.cos(x)


def _sin_cos_fwd(x):
    return (jnp.sin(x), jnp.cos(x)), x


def _sin_cos_bwd(x, cts):
    g_sin, g_cos = cts
    return (jnp.cos(x) * g_sin - jnp.sin(x) * g_cos,)


sin_cos.defvjp(_sin_cos_fwd, _sin_cos_bwd)


@jax.custom_vjp
def log1p_exp(x):
    return jnp.log1p(jnp.exp(x))


def _log1p_exp_fwd(x):
    return jnp.log1p(jnp.exp(x)), x


def _log1p_exp_bwd(x, g):
    return (g * jax.nn.sigmoid(x) + 0.1 * x,)  # a stray term of the residual alone


log1p_exp.defvjp(_log1p_exp_fwd, _log1p_exp_bwd)
