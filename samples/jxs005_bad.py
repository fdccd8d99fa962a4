"""JXS005 bad: a host kernel (`pure_callback`; an `ffi_call` to a C++ kernel behaves the same) under `jit` with a
sharded input. XLA cannot partition the opaque custom call, so it all-gathers the whole operand onto every device
and runs the kernel there: right numbers, a full copy per device per call."""

import jax
import numpy as np

JAXDIAG = {"cumsum_rows": {"args": ["f32[8,16]"]}}


def _cumsum_rows_host(x):
    """The host kernel: a cumulative sum along each row (an opaque custom call to XLA)."""
    return np.cumsum(x, axis=-1).astype(x.dtype)


def cumsum_rows(x):
    return jax.pure_callback(  # jaxdiag-expect: JXS005
        _cumsum_rows_host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="expand_dims")
