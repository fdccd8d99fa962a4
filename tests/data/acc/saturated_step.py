"""A spike count with a piecewise-linear surrogate derivative, as spiking-network libraries write it: the count is
`floor(x / threshold)` clipped to a maximum, its JVP `x_dot / threshold - threshold_dot * x / threshold**2` near
the threshold. At threshold = 0 the primal divides by zero and is finite only because the clip saturates the
infinity: its derivative there is no number, so the rule's NaN is no defect. Callers pass positive thresholds."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def spike_count(x, threshold):
    """Spike count, with a piecewise-linear surrogate derivative."""
    spikes = (x >= threshold) * jnp.floor(x / threshold)
    return jnp.clip(spikes, 0.0, 2.0**16)


@spike_count.defjvp
def spike_count_jvp(primals, tangents):
    x, threshold = primals
    x_dot, threshold_dot = tangents
    near = x >= threshold - 0.5
    return spike_count(x, threshold), near * (x_dot / threshold - threshold_dot * x / threshold**2)
