"""A cumulative sum computed chunk by chunk, whose backward pass forgets the carry between chunks: wrong only on
inputs longer than one chunk. Its public wrapper runs on any vector (inference's first rung, three values, is one
chunk), and its docstring example calls it on twelve: the author's own call, which shows the bug."""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def _chunked_cumsum(x, chunk: int):
    return jnp.cumsum(x)


def _fwd(x, chunk):
    return jnp.cumsum(x), None


def _bwd(chunk, _, g):
    n = g.shape[0]
    pad = (-n) % chunk
    blocks = jnp.pad(g, (0, pad)).reshape(-1, chunk)
    within = jnp.flip(jnp.cumsum(jnp.flip(blocks, -1), -1), -1)  # the carry from later chunks is never added
    return (within.reshape(-1)[:n],)


_chunked_cumsum.defvjp(_fwd, _bwd)


def chunked_cumsum(x, chunk=4):
    """The running total of `x`, chunk by chunk.

    >>> x = jnp.linspace(0.0, 1.0, 12)
    >>> chunked_cumsum(x)
    """
    return _chunked_cumsum(x, chunk)
