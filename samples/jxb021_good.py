"""JXB021 good: the declared vmap_method matches what each kernel can do.

- `cumsum_rows`: `CumsumRows` treats the leading dimensions as a batch of rows, so `"broadcast_all"` is correct.
- `cumsum_rows_sequential`: `CumsumFlat` is not batch-aware; `"sequential"` calls it once per example.
- `add_bias`: elementwise `AddBias` with `"broadcast_all"`: both operands arrive as (B, 3).
- `cumsum_callback`: the NumPy callback sums along the last axis only, so `"broadcast_all"` is correct.
"""

import jax
import numpy as np

# The FFI targets are compiled from ffi_kernels.cc (next to this file) and registered by the tests
# (tests/ffi_build.py); register them the same way before checking this sample.

JAXDIAG = {
    "cumsum_rows": {"args": ["f32[3]"]},
    "cumsum_rows_sequential": {"args": ["f32[3]"]},
    "add_bias": {"args": ["f32[3]", "f32[3]"]},
    "cumsum_callback": {"args": ["f32[3]"]},
}


def cumsum_rows(x):
    return jax.ffi.ffi_call("CumsumRows", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="broadcast_all")(x)


def cumsum_rows_sequential(x):
    return jax.ffi.ffi_call("CumsumFlat", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="sequential")(x)


def add_bias(x, bias):
    return jax.ffi.ffi_call("AddBias", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="broadcast_all")(x, bias)


def _cumsum_last_axis(x):
    return np.cumsum(x, axis=-1).astype(x.dtype)


def cumsum_callback(x):
    return jax.pure_callback(_cumsum_last_axis, jax.ShapeDtypeStruct(x.shape, x.dtype), x,
                             vmap_method="broadcast_all")
