"""JXB020 bad: no `vmap_method`. `jax.vmap(cumsum_rows)` raises `NotImplementedError: vmap is only supported
for the ffi_call primitive when vmap_method is one of 'sequential', ... Got vmap_method=None`;
JAX 0.5 still looped with a DeprecationWarning. The same holds for `jax.pure_callback`."""

import jax
import numpy as np

# The FFI targets are compiled from ffi_kernels.cc (next to this file) and registered by the tests
# (tests/ffi_build.py); register them the same way before checking this sample.

JAXDIAG = {"cumsum_rows": {"args": ["f32[2,3]"]}, "cumsum_callback": {"args": ["f32[2,3]"]}}


def cumsum_rows(x):
    return jax.ffi.ffi_call("CumsumRows", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)  # jaxdiag-expect: JXB020


def _cumsum_last_axis(x):
    return np.cumsum(x, axis=-1).astype(x.dtype)


def cumsum_callback(x):
    return jax.pure_callback(_cumsum_last_axis, jax.ShapeDtypeStruct(x.shape, x.dtype), x)  # jaxdiag-expect: JXB020
