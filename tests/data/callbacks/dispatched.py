"""Host solves bound as solver libraries bind them: `host_scale_single` calls its callback without a vmap_method,
and the module's custom_vmap `scale` is the way its users batch it (its rule calls the batched kernel). `jax.vmap`
of `host_scale_single` itself fails, outside its design. `host_shift_single` has no such dispatcher: under
`jax.vmap` it fails for its users (JXB020)."""

import jax
import numpy as np
from jax import custom_batching


def _host_scale(x):
    return (2.0 * np.asarray(x)).astype(np.asarray(x).dtype)


def host_scale_single(x):
    return jax.pure_callback(_host_scale, jax.ShapeDtypeStruct(x.shape, x.dtype), x)


def host_scale_batched(xs):
    return jax.pure_callback(_host_scale, jax.ShapeDtypeStruct(xs.shape, xs.dtype), xs, vmap_method="expand_dims")


@custom_batching.custom_vmap
def scale(x):
    return host_scale_single(x)


@scale.def_vmap
def _scale_vmap(axis_size, in_batched, xs):
    return host_scale_batched(xs), in_batched[0]


def host_shift_single(x):
    return jax.pure_callback(lambda v: (np.asarray(v) + 1.0).astype(np.asarray(v).dtype),
                             jax.ShapeDtypeStruct(x.shape, x.dtype), x)
