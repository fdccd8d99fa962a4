"""A custom_jvp special function taking two int statics related by an inequality nothing states: an order `k` and
a recurrence length `M`, which must exceed `k + 1`. The same int for both (4 and 4) fails; `recurrence_wrong`'s JVP
halves every derivative."""

from functools import partial

import jax
import jax.numpy as jnp


def _terms(k: int, x, M: int):
    if M < k + 2:
        raise ValueError(f"recurrence length M ({M}) must be greater than the order k ({k}) plus one")
    return jnp.stack([jnp.sin(x + j) / (j + 1) for j in range(M)])[:k + 1]


@partial(jax.custom_jvp, nondiff_argnums=(0, 2))
def recurrence(k: int, x, M: int):
    return _terms(k, x, M)


@recurrence.defjvp
def _recurrence_jvp(k, M, primals, tangents):
    (x,), (t,) = primals, tangents
    return recurrence(k, x, M), jnp.stack([jnp.cos(x + j) / (j + 1) for j in range(M)])[:k + 1] * t


@partial(jax.custom_jvp, nondiff_argnums=(0, 2))
def recurrence_wrong(k: int, x, M: int):
    return _terms(k, x, M)


@recurrence_wrong.defjvp
def _recurrence_wrong_jvp(k, M, primals, tangents):  # jaxdiag-expect: JXG024
    (x,), (t,) = primals, tangents
    return recurrence_wrong(k, x, M), jnp.stack([jnp.cos(x + j) / (2 * (j + 1)) for j in range(M)])[:k + 1] * t
