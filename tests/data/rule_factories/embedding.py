"""An embedding lookup whose custom_vjp a cached private factory builds per configuration; its bwd scales the
scattered cotangent by the padding flag's count wrongly (a factor of 2 everywhere)."""

from functools import lru_cache
from typing import Optional

import jax
import jax.numpy as jnp


@lru_cache(maxsize=None)
def _lookup_fn(padding_idx: Optional[int], scale_by_count: bool):
    @jax.custom_vjp
    def lookup(table, ids):
        return table[ids]

    def lookup_fwd(table, ids):
        return table[ids], (ids, table.shape)

    def lookup_bwd(res, g):
        ids, shape = res
        grad = jnp.zeros(shape, g.dtype).at[ids].add(g)
        if scale_by_count:
            grad = grad / jnp.maximum(jnp.bincount(ids.ravel(), length=shape[0]), 1)[:, None]
        return 2.0 * grad, None

    lookup.defvjp(lookup_fwd, lookup_bwd)
    return lookup


class Embedding:
    def __init__(self, table, padding_idx=None):
        self.table, self.padding_idx = table, padding_idx

    def __call__(self, ids):
        return _lookup_fn(self.padding_idx, False)(self.table, ids)
