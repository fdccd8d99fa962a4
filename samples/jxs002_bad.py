"""JXS002 bad: `partition` lowers on each device's own shard (it keeps the operand's sharding) but returns a
replicated result sharding, which promises every device the whole result. The per-device result does not fit, so
jit on a sharded input fails to compile:

    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("a", "b"))   # 8 CPU devices
    x = jax.device_put(np.ones((8, 16), np.float32), NamedSharding(mesh, P("a", None)))
    jax.jit(scale)(x)   # raises: ValueError: Mismatch in result shapes. [float32[4,16]] vs [float32[8,16]]

(the input replicated, `P()`, still works, which is how it slips through).
"""

from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

JAXDIAG = {"scale": {"args": ["f32[8,16]"]}}


@custom_partitioning
def scale(x):
    return x * 2.0


def infer_scale_sharding(mesh, arg_shapes, result_shape):
    return arg_shapes[0].sharding


def partition_scale(mesh, arg_shapes, result_shape):  # jaxdiag-expect: JXS002
    def lower(x):
        return x * 2.0

    return mesh, lower, NamedSharding(mesh, P()), (arg_shapes[0].sharding,)


scale.def_partition(
    infer_sharding_from_operands=infer_scale_sharding,
    partition=partition_scale,
    sharding_rule="i j -> i j",
)
