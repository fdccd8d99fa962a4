"""JXB021 bad: kernels that treat their whole buffer as one example, declared with a vectorizing vmap_method.

- `cumsum_rows`: `CumsumFlat` runs one cumulative sum over the buffer. Under vmap with `"broadcast_all"` it gets
  all examples as one (B, 3) buffer, and the sum runs on from one example into the next: [[1,3,6],[10,15,21]]
  instead of [[1,3,6],[4,9,15]], silently.
- `cumsum_rows_expand`: the same kernel with `"expand_dims"`: the same silent mix.
- `add_bias`: `AddBias` needs equal element counts. With `"expand_dims"`, `vmap(add_bias, in_axes=(0, None))`
  hands it x as (B, 3) and the unbatched bias as (1, 3).
- `cumsum_callback`: a NumPy callback that flattens its input, declared `"broadcast_all"`.
"""

import jax
import numpy as np

# The FFI targets are compiled from ffi_kernels.cc (next to this file) and registered by the tests
# (tests/ffi_build.py); register them the same way before checking this sample.

JAXDIAG = {
    "cumsum_rows": {"args": ["f32[3]"]},
    "cumsum_rows_expand": {"args": ["f32[3]"]},
    "add_bias": {"args": ["f32[3]", "f32[3]"]},
    "cumsum_callback": {"args": ["f32[3]"]},
}


def cumsum_rows(x):
    return jax.ffi.ffi_call("CumsumFlat", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="broadcast_all")(x)  # jaxdiag-expect: JXB021


def cumsum_rows_expand(x):
    return jax.ffi.ffi_call("CumsumFlat", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="expand_dims")(x)  # jaxdiag-expect: JXB021


def add_bias(x, bias):
    return jax.ffi.ffi_call("AddBias", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="expand_dims")(x, bias)  # jaxdiag-expect: JXB021


def _cumsum_flat(x):
    return np.cumsum(x.ravel()).reshape(x.shape).astype(x.dtype)


def cumsum_callback(x):
    return jax.pure_callback(_cumsum_flat, jax.ShapeDtypeStruct(x.shape, x.dtype), x, vmap_method="broadcast_all")  # jaxdiag-expect: JXB021
