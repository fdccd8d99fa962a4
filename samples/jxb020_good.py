"""JXB020 good: each call says how it batches. `CumsumRows` and the NumPy callback work row by row over any
leading dimensions, so one call on the whole batch (`"broadcast_all"`) is correct."""

import jax
import numpy as np

# The FFI targets are compiled from ffi_kernels.cc (next to this file) and registered by the tests
# (tests/ffi_build.py); register them the same way before checking this sample.

JAXDIAG = {"cumsum_rows": {"args": ["f32[2,3]"]}, "cumsum_callback": {"args": ["f32[2,3]"]}}


def cumsum_rows(x):
    return jax.ffi.ffi_call("CumsumRows", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="broadcast_all")(x)


def _cumsum_last_axis(x):
    return np.cumsum(x, axis=-1).astype(x.dtype)


def cumsum_callback(x):
    return jax.pure_callback(_cumsum_last_axis, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                             vmap_method="broadcast_all")
