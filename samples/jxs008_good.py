"""JXS008 good: the same FFT, its `sharding_rule` giving the transformed axis of the result its own factor
(`... i -> ... k`), so Shardy replicates that axis on the result as `partition` does: the gather the FFT needs is
planned once, and the result is not re-sliced after the call."""

import jax
from jax.experimental.custom_partitioning import custom_partitioning
from jax.numpy.fft import fft
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

JAXDIAG = {"fft_last": {"args": ["c64[8,16]"]}}


def supported_sharding(sharding, shape):
    """Keep the sharding of the leading dimensions, replicate the last one (the FFT mixes values along it)."""
    rank = len(shape.shape)
    max_shared_dims = min(len(sharding.spec), rank - 1)
    names = tuple(sharding.spec[:max_shared_dims]) + tuple(None for _ in range(rank - max_shared_dims))
    return NamedSharding(sharding.mesh, P(*names))


def partition(mesh, arg_shapes, result_shape):
    arg_shardings = jax.tree.map(lambda x: x.sharding, arg_shapes)
    sharding = supported_sharding(arg_shardings[0], arg_shapes[0])
    return mesh, fft, sharding, (sharding,)


def infer_sharding_from_operands(mesh, arg_shapes, result_shape):
    arg_shardings = jax.tree.map(lambda x: x.sharding, arg_shapes)
    return supported_sharding(arg_shardings[0], arg_shapes[0])


@custom_partitioning
def fft_last(x):
    return fft(x)


fft_last.def_partition(
    infer_sharding_from_operands=infer_sharding_from_operands,
    partition=partition,
    sharding_rule="... i -> ... k",
)
