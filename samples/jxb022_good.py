"""JXB022 good: `"expand_dims"` is the supported replacement for a batch-aware kernel (`"sequential"` for one
that is not)."""

import jax

try:
    from . import ffi_kernels  # noqa: F401  compiles ffi_kernels.cc once and registers its targets
except ImportError:  # loaded as a file (jaxdiag batching samples/...py:attr): samples/ is on sys.path
    import ffi_kernels  # noqa: F401

JAXDIAG = {"cumsum_rows": {"args": ["f32[2,3]"]}}


def cumsum_rows(x):
    return jax.ffi.ffi_call("CumsumRows", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="expand_dims")(x)
