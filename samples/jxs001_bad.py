"""JXS001 bad: a custom_partitioning FFT whose `partition` keeps the transformed axis sharded.

With the input sharded along the last axis, every device transforms only its own quarter of each signal: exact for
`P()` and `P('a', None)`, max error about 9 for `P(None, 'b')` on a 2x4 mesh, with no error from JAX. (The
`sharding_rule` makes the same claim for Shardy: `j` passes through.)
"""

import jax.numpy as jnp
from jax.experimental.custom_partitioning import custom_partitioning

JAXDIAG = {"fft_real": {"args": ["f32[8,16]"]}}


@custom_partitioning
def fft_real(x):
    return jnp.fft.fft(x, axis=-1).real


def infer_fft_sharding(mesh, arg_shapes, result_shape):
    return arg_shapes[0].sharding


def partition_fft(mesh, arg_shapes, result_shape):  # jaxdiag-expect: JXS001
    sharding = arg_shapes[0].sharding  # keeps whatever sharding arrives, the transformed last axis included

    def lower(x):
        return jnp.fft.fft(x, axis=-1).real

    return mesh, lower, sharding, (sharding,)


fft_real.def_partition(
    infer_sharding_from_operands=infer_fft_sharding,
    partition=partition_fft,
    sharding_rule="i j -> i j",  # jaxdiag-expect: JXS003
)
