"""Two custom_jvp functions probed with an argument on the edge 0. `spike_count` divides by its threshold in the
primal too: at threshold = 0 the primal makes +-inf and only the clip to `max_spikes` turns it finite again, so 0
is outside its own domain and the NaN its JVP gives there says nothing about the rule (a threshold is positive).
`power_or_one` is finite at x = 0 without any infinity (0 ** y = 0), while its JVP multiplies by log(x): NaN where
the derivative in y is 0, a real defect (JXG027)."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def spike_count(x, threshold, max_spikes=16.0):
    spikes = (x >= threshold) * jnp.floor(x / threshold)
    return jnp.clip(spikes, 0.0, max_spikes)


@spike_count.defjvp
def _spike_count_jvp(primals, tangents):
    x, threshold, max_spikes = primals
    x_dot, threshold_dot, _ = tangents
    out = spike_count(x, threshold, max_spikes)
    return out, (x >= threshold - 0.5) * (x_dot / threshold - threshold_dot * x / threshold**2)


@jax.custom_jvp
def power_or_one(x, y):
    return jnp.where(y == 0, 1.0, jnp.power(x, y))


@power_or_one.defjvp
def _power_or_one_jvp(primals, tangents):
    x, y = primals
    x_dot, y_dot = tangents
    out = power_or_one(x, y)
    return out, y * power_or_one(x, y - 1) * x_dot + out * jnp.log(x) * y_dot
