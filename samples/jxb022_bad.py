"""JXB022 bad: `vmap_method="legacy_vectorized"` is deprecated. It still works for this batch-aware kernel, but
its semantics (unbatched operands passed without a batch axis) are ambiguous and it is slated for removal."""

import jax

# The FFI targets are compiled from ffi_kernels.cc (next to this file) and registered by the tests
# (tests/ffi_build.py); register them the same way before checking this sample.

JAXDIAG = {"cumsum_rows": {"args": ["f32[2,3]"]}}


def cumsum_rows(x):
    return jax.ffi.ffi_call("CumsumRows", jax.ShapeDtypeStruct(x.shape, x.dtype),  # jaxdiag-expect: JXB022
                            vmap_method="legacy_vectorized")(x)
