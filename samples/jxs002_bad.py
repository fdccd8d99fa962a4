"""JXS002 bad: `infer_sharding_from_operands` (and the Shardy rule) declare the result sharded like the input, but
`partition` returns a replicated result (it lowers on whole arrays). The numbers are right, yet XLA gathers the
operand and re-slices the result around every call to reconcile the two."""

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
    replicated = NamedSharding(mesh, P())

    def lower(x):
        return x * 2.0

    return mesh, lower, replicated, (replicated,)


scale.def_partition(
    infer_sharding_from_operands=infer_scale_sharding,
    partition=partition_scale,
    sharding_rule="i j -> i j",
)
