"""Rules exact only on the values their docstrings require: 0/1 spikes (the backward pass rebuilds them from a
residual packed to bits) and positive inputs (a JVP written for x > 0). Each has an undocumented twin, the same
rule without the sentence, which is judged on normal draws and is wrong there. The spike rule's docstring also rules
out second derivatives: they are not checked under `check`."""

import jax
import jax.numpy as jnp


def _spike_fwd(spikes, weight):
    return spikes @ weight, (spikes > 0.5, weight)  # 1 bit per spike: exact for 0/1 spikes only


def _spike_bwd(residual, g):
    bits, weight = residual
    return jax.vjp(jnp.matmul, bits.astype(g.dtype), weight)[1](g)


@jax.custom_vjp
def spike_dense(spikes, weight):
    """``spikes @ weight``, saving the spikes as bits for the backward pass.

    Valid only when ``spikes`` is exactly binary (values in ``{0, 1}``): the saved residual is a 0/1 mask. Only
    the first-order VJP is correct; second-order derivatives are not, since the mask is not differentiated.
    """
    return spikes @ weight


spike_dense.defvjp(_spike_fwd, _spike_bwd)


@jax.custom_vjp
def spike_dense_undocumented(spikes, weight):
    return spikes @ weight


spike_dense_undocumented.defvjp(_spike_fwd, _spike_bwd)


def _abs_power_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return jnp.abs(x) ** 1.5, 1.5 * jnp.sqrt(jnp.abs(x)) * dx  # the sign of x dropped: right for x > 0 only


@jax.custom_jvp
def abs_power(x):
    """|x| ** 1.5.

    Args:
        x: strictly positive values.
    """
    return jnp.abs(x) ** 1.5


abs_power.defjvp(_abs_power_jvp)


@jax.custom_jvp
def abs_power_undocumented(x):
    return jnp.abs(x) ** 1.5


abs_power_undocumented.defjvp(_abs_power_jvp)
