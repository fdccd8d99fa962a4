"""Spike functions of a spiking-network package: a Heaviside step whose derivative is a surrogate, stated in the
docstrings as such packages write it. A stated surrogate is the deliberate reading of JXG033/JXG014 (as
`# jaxdiag: intended[...]`); the same rule without the statement, a statement that names no derivative ("a
surrogate model"), and a stated straight-through rule whose factor is wrong where the primal is smooth are still
reported."""

import jax
import jax.numpy as jnp


def _triangle(x):
    return jnp.maximum(0.0, 1.0 - jnp.abs(x))


@jax.custom_jvp
def spike(x):
    """Heaviside step function with piece-wise linear derivative to use as spike-generation surrogate.

    Args:
        x: membrane potential minus threshold
    """
    return (x >= 0).astype(x.dtype)


@spike.defjvp
def _spike_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return spike(x), _triangle(x) * dx


@jax.custom_jvp
def spike_plain(x):
    return (x >= 0).astype(x.dtype)


@spike_plain.defjvp
def _spike_plain_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return spike_plain(x), _triangle(x) * dx


@jax.custom_jvp
def threshold_model(x):
    """Evaluates the threshold of the surrogate model."""
    return (x >= 0).astype(x.dtype)


@threshold_model.defjvp
def _threshold_model_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return threshold_model(x), _triangle(x) * dx


@jax.custom_jvp
def squash(x):
    """tanh with a straight-through gradient in the saturated range."""
    return jnp.tanh(x)


@squash.defjvp
def _squash_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    y = jnp.tanh(x)
    return y, 2.0 * (1.0 - y**2) * dx


def sigmoid_spike(slope=25.0):
    """Returns the Heaviside step function with a fast-sigmoid surrogate derivative (the factory documents what it
    builds; the rule inside has no docstring of its own)."""

    @jax.custom_jvp
    def step(x):
        return (x >= 0).astype(x.dtype)

    @step.defjvp
    def _step_jvp(primals, tangents):
        (x,), (dx,) = primals, tangents
        return step(x), dx / (slope * jnp.abs(x) + 1.0) ** 2

    return step


factory_spike = sigmoid_spike()
