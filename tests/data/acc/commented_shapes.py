"""An all-pole filter whose arguments are documented the nbdev way, by a comment after each parameter of the
signature (`x: jnp.ndarray,  # (B, time)`), not in a docstring; its optional initial state defaults to None, a path
the filter does not handle (`jnp.flip(None)`), so only a call passing it runs."""

import jax
import jax.numpy as jnp


def _one_filter(x, a, state):
    def step(carry, inputs):
        xt, at = inputs
        y = xt - jnp.flip(carry) @ at
        return jnp.concatenate([carry[1:], y.reshape(-1)]), y

    _, y = jax.lax.scan(step, jnp.flip(state, axis=-1), (x, a))
    return y


_batched = jax.vmap(_one_filter)


@jax.custom_vjp
def all_pole(
    x: jnp.ndarray,  # (B, time)
    a: jnp.ndarray,  # (B, time, order)
    state: jnp.ndarray = None,  # (B, order) initial state
):
    """Apply the all-pole filter with coefficients `a` to the signal `x`."""
    return _batched(x, a, state)


def _all_pole_fwd(x, a, state):
    return _batched(x, a, state), (x, a, state)


def _all_pole_bwd(res, g):
    _, pullback = jax.vjp(_batched, *res)
    return pullback(g)


all_pole.defvjp(_all_pole_fwd, _all_pole_bwd)
