"""A linear recurrence as linear-attention kernels write it: it returns its outputs and its final state, and the final
state does not depend on the queries. `recurrence_flipped`'s bwd returns the key cotangents in reverse time order:
wrong on the interior, no clipping explains it. Before, the queries' zero gradient on the final state (and bwd's zero
for them there) read as a gradient transformation the queries control, and the wrong keys were a JXG014 warning
("may be intended"); it is JXG024. `recurrence` is right."""

import jax
import jax.numpy as jnp


def _scan(q, k, v):
    def step(h, x):
        qt, kt, vt = x
        h = h + kt[:, None] * vt[None, :]
        return h, qt @ h

    h, out = jax.lax.scan(step, jnp.zeros((k.shape[1], v.shape[1]), k.dtype), (q, k, v))
    return out, h


def _fwd(q, k, v):
    return _scan(q, k, v), (q, k, v)


def _bwd(residual, g):
    return jax.vjp(_scan, *residual)[1](g)


def _bwd_flipped(residual, g):
    dq, dk, dv = _bwd(residual, g)
    return dq, jnp.flip(dk, 0), dv  # JXG024


@jax.custom_vjp
def recurrence(q, k, v):
    return _scan(q, k, v)


@jax.custom_vjp
def recurrence_flipped(q, k, v):
    return _scan(q, k, v)


recurrence.defvjp(_fwd, _bwd)
recurrence_flipped.defvjp(_fwd, _bwd_flipped)
