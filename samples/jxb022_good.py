"""JXB022 good: `"expand_dims"` is the supported replacement for a batch-aware kernel (`"sequential"` for one
that is not)."""

import jax

# The FFI targets are compiled from ffi_kernels.cc (next to this file) and registered by the tests
# (tests/ffi_build.py); register them the same way before checking this sample.

JAXDIAG = {"cumsum_rows": {"args": ["f32[2,3]"]}}


def cumsum_rows(x):
    return jax.ffi.ffi_call("CumsumRows", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="expand_dims")(x)
