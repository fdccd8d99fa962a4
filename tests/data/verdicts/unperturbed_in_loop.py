"""A custom_vjp called in a loop body with a scale computed from an integer step: JAX never perturbs the scale
there (its fwd's `assert not scale.perturbed` holds in plain JAX), so checking the rule with a perturbed scale checks
it outside its contract. `loss_bad` passes a differentiable scale: perturbed in plain JAX too."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def scaled(x, scale):
    return x * scale


def scaled_fwd(x, scale):
    assert not scale.perturbed, "scale is a hyperparameter: stop-gradient it before the call"
    return x.value * scale.value, scale.value


def scaled_bwd(scale, g):
    return g * scale, jnp.zeros_like(scale)


scaled.defvjp(scaled_fwd, scaled_bwd, symbolic_zeros=True)


def loss(x, step):
    def body(i, carry):
        return scaled(carry, (step + i).astype(jnp.float32) * 0.5)
    return jnp.sum(jax.lax.fori_loop(0, 3, body, x) ** 2)


def loss_bad(x, scale):
    def body(i, carry):
        return scaled(carry, scale)
    return jnp.sum(jax.lax.fori_loop(0, 3, body, x) ** 2)
