"""A nested custom_vjp whose fwd relies on JAX never perturbing `scale` (symbolic_zeros=True gives fwd each
argument's `perturbed` flag): the function computes `scale` from an integer step, so JAX never differentiates it
there and `jax.grad(loss)` works. The checks of the nested rule perturb only what JAX itself
perturbs at its call site, so this is clean (compare unperturbed_input_bad.py)."""

import functools

import jax
import jax.numpy as jnp

JAXDIAG = {"loss": {"args": ["f32[3]", "i32[3]"]}}


@functools.cache
def _scaled():
    @jax.custom_vjp
    def scaled(x, scale):
        return x * scale

    def scaled_fwd(x, scale):
        assert not scale.perturbed, "scale is a hyperparameter: stop-gradient it before the call"
        return x.value * scale.value, scale.value

    def scaled_bwd(scale, g):
        return g * scale, jnp.zeros_like(scale)

    scaled.defvjp(scaled_fwd, scaled_bwd, symbolic_zeros=True)
    return scaled


def loss(x, step):
    scale = jnp.cos(0.1 * step.astype(x.dtype))  # a schedule of an integer step: never differentiated
    return jnp.sum(_scaled()(x, scale) ** 2)
