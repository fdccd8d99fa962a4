"""The bug unperturbed_input_good.py avoids: `loss` passes `scale` to the custom_vjp without stop-gradient, so
`jax.grad(loss, argnums=(0, 1))` perturbs it and fwd's assertion fails in plain JAX (JXG017 at fwd)."""

import functools

import jax
import jax.numpy as jnp

JAXDIAG = {"loss": {"args": ["f32[3]", "f32[3]"]}}


@functools.cache
def _scaled():
    @jax.custom_vjp
    def scaled(x, scale):
        return x * scale

    def scaled_fwd(x, scale):  # jaxdiag-expect: JXG017
        assert not scale.perturbed, "scale is a hyperparameter: stop-gradient it before the call"
        return x.value * scale.value, scale.value

    def scaled_bwd(scale, g):
        return g * scale, jnp.zeros_like(scale)

    scaled.defvjp(scaled_fwd, scaled_bwd, symbolic_zeros=True)
    return scaled


def loss(x, scale):
    return jnp.sum(_scaled()(x, scale) ** 2)
