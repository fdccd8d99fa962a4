"""JXS005 good: the kernel treats rows independently, so `shard_map` over the rows calls it on each device's own
rows: nothing is gathered (an input sharded along the scanned last axis is resharded to rows by shard_map)."""

import jax
import numpy as np
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

try:
    from jax import shard_map
except ImportError:  # jax < 0.6
    from jax.experimental.shard_map import shard_map

try:
    from . import ffi_kernels  # noqa: F401  compiles ffi_kernels.cc once and registers its targets
except ImportError:  # loaded as a file: samples/ is on sys.path
    import ffi_kernels  # noqa: F401

JAXDIAG = {"cumsum_rows": {"args": ["f32[8,16]"]}}


def _kernel(x):
    return jax.ffi.ffi_call("CumsumRows", jax.ShapeDtypeStruct(x.shape, x.dtype), vmap_method="expand_dims")(x)


def cumsum_rows(x):
    devices = jax.devices()
    rows = len(devices) if x.shape[0] % len(devices) == 0 else 1
    mesh = Mesh(np.array(devices[:rows]), ("rows",))
    return shard_map(_kernel, mesh=mesh, in_specs=P("rows", None), out_specs=P("rows", None))(x)
