"""JXB022 bad: `vmap_method="legacy_vectorized"` is deprecated. It still works for this batch-aware kernel, but
its semantics (unbatched operands passed without a batch axis) are ambiguous and it is slated for removal."""

import jax

try:
    from . import ffi_kernels  # noqa: F401  compiles ffi_kernels.cc once and registers its targets
except ImportError:  # loaded as a file (jaxdiag batching samples/...py:attr): samples/ is on sys.path
    import ffi_kernels  # noqa: F401

JAXDIAG = {"cumsum_rows": {"args": ["f32[2,3]"]}}


def cumsum_rows(x):
    return jax.ffi.ffi_call("CumsumRows", jax.ShapeDtypeStruct(x.shape, x.dtype),
                            vmap_method="legacy_vectorized")(x)
