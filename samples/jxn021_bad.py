"""JXN021 bad: a ring step of sequence parallelism, `shift(x, axis_name)`, which hands each device's shard to the next
device of `axis_name` (`lax.ppermute`) and doubles it; its bwd sends the cotangent back the other way. Outside a
`shard_map` it cannot run, so no input could be inferred for it before; jaxdiag now runs it on two devices of the
axis (`jax.vmap(..., axis_name=..., axis_size=2)`), says so in a note, and checks the bwd there: it is right (a bwd
that forgot to send the cotangent back would give each device its own shard's gradient, JXG024)."""

import functools

import jax
from jax import lax

_RING = [(0, 1), (1, 0)]  # two devices: each sends to the other


@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))
def shift(x, axis_name):
    return lax.ppermute(x, axis_name, _RING) * 2.0


def _shift_fwd(x, axis_name):
    return shift(x, axis_name), None


def _shift_bwd(axis_name, _, g):
    return (lax.ppermute(g * 2.0, axis_name, [(dst, src) for src, dst in _RING]),)


shift.defvjp(_shift_fwd, _shift_bwd)
