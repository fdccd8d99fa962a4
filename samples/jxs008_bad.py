"""JXS008 bad: the custom_partitioning FFT written the way JAX's documentation writes it. `partition` and
`infer_sharding_from_operands` replicate the transformed (last) axis, but the Shardy `sharding_rule` says that axis
passes through (`... i -> ... i`). Results are exact under every input sharding; the cost is that Shardy keeps the
last axis sharded on the result, so XLA all-gathers the operand and re-slices the result around every call.

Plain JAX shows both halves on 8 CPU devices (`XLA_FLAGS=--xla_force_host_platform_device_count=8`, Shardy on,
as on newer JAX or `jax.config.update("jax_use_shardy_partitioner", True)`)::

    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("a", "b"))
    x = jax.device_put(np.ones((8, 16), np.complex64), NamedSharding(mesh, P(None, "b")))
    compiled = jax.jit(fft_last).lower(x).compile()
    np.abs(compiled(x) - np.fft.fft(np.asarray(x))).max()   # ~1e-6: exact
    compiled(x).sharding.spec                                # P(None, 'b'): the rule kept the axis sharded
    "all-gather" in compiled.as_text()                       # True: the operand is gathered on every call
"""

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
    sharding_rule="... i -> ... i",  # jaxdiag-expect: JXS008
)
