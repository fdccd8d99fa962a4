"""JXS007 good: `partition` returns the sharding `infer_sharding_from_operands` declared (an elementwise op keeps
any sharding), so each device scales its own shard and nothing moves."""

from jax.experimental.custom_partitioning import custom_partitioning

JAXDIAG = {"scale": {"args": ["f32[8,16]"]}}


@custom_partitioning
def scale(x):
    return x * 2.0


def infer_scale_sharding(mesh, arg_shapes, result_shape):
    return arg_shapes[0].sharding


def partition_scale(mesh, arg_shapes, result_shape):
    sharding = arg_shapes[0].sharding

    def lower(x):
        return x * 2.0

    return mesh, lower, sharding, (sharding,)


scale.def_partition(
    infer_sharding_from_operands=infer_scale_sharding,
    partition=partition_scale,
    sharding_rule="i j -> i j",
)
