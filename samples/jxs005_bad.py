"""JXS005 bad: an `ffi_call` to a C++ kernel under `jit` with a sharded input. XLA cannot partition the opaque
custom call, so it all-gathers the whole operand onto every device and runs the kernel there: right numbers, a
full copy per device per call."""

import jax

try:
    from . import ffi_kernels  # noqa: F401  compiles ffi_kernels.cc once and registers its targets
except ImportError:  # loaded as a file: samples/ is on sys.path
    import ffi_kernels  # noqa: F401

JAXDIAG = {"cumsum_rows": {"args": ["f32[8,16]"]}}


def cumsum_rows(x):
    return jax.ffi.ffi_call(  # jaxdiag-expect: JXS005
        "CumsumRows", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="expand_dims")(x)
