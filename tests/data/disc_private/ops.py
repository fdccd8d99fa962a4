"""Two private helpers each apply `fn(*xs)` (an elementwise function of several arrays of one shape, returning one
array per input) through a custom_vmap made on every call; only the step methods of a private class call them,
so no public function leads there. `_flat_pointwise` batches by flattening the whole batch (right for any pointwise
`fn`); `_first_example` answers a batch with the first example's result, broadcast (wrong)."""

import jax
import jax.numpy as jnp


def _flat_pointwise(fn, *xs):
    @jax.custom_batching.custom_vmap
    def pointwise(*xs):
        flat = fn(*(jnp.ravel(x) for x in xs))
        return tuple(y.reshape(xs[0].shape) for y in flat)

    @pointwise.def_vmap
    def pointwise_vmap(axis_size, in_batched, *xs):
        xs = tuple(x if b else jnp.broadcast_to(x, (axis_size, *x.shape)) for x, b in zip(xs, in_batched))
        out = pointwise(*xs)
        return out, (True,) * len(out)

    return pointwise(*xs)


def _first_example(fn, *xs):
    @jax.custom_batching.custom_vmap
    def pointwise(*xs):
        return tuple(fn(*xs))

    @pointwise.def_vmap
    def pointwise_vmap(axis_size, in_batched, *xs):
        first = tuple(x[0] if b else x for x, b in zip(xs, in_batched))
        out = pointwise(*first)
        return tuple(jnp.broadcast_to(y, (axis_size, *y.shape)) for y in out), (True,) * len(out)

    return pointwise(*xs)


class _Stepper:
    def __init__(self, fn):
        self.fn = fn

    def step(self, y, v):
        return _flat_pointwise(self.fn, y, v)

    def cheap_step(self, y, v):
        return _first_example(self.fn, y, v)
