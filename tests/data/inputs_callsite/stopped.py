"""A rule that gives its temperature no cotangent, because every caller stops its gradient: the temperature is a
setting, never differentiated. Perturbing it checks the rule outside its contract."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def tempered_logsumexp(x, temperature):
    return temperature * jax.nn.logsumexp(x / temperature)


def _fwd(x, temperature):
    return tempered_logsumexp(x, temperature), (x, temperature)


def _bwd(res, g):
    x, temperature = res
    return g * jax.nn.softmax(x / temperature), None


tempered_logsumexp.defvjp(_fwd, _bwd)


def smooth_max(x, temperature=1.0):
    """The package's caller: the temperature is a setting, its gradient stopped."""
    return tempered_logsumexp(x, jax.lax.stop_gradient(jnp.abs(temperature) + 0.5))
