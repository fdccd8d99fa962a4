"""JXS003 good: the result's scanned axis gets its own factor `k`, so Shardy never passes a sharding of `j`
through the cumulative sum."""

import jax.numpy as jnp
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

JAXDIAG = {"running_total": {"args": ["f32[8,16]"]}}


@custom_partitioning
def running_total(x):
    return jnp.cumsum(x, axis=-1)


def _rows_only(mesh, arg_shapes):
    spec = tuple(arg_shapes[0].sharding.spec)
    return NamedSharding(mesh, P(spec[0] if spec else None, None))


def infer_total_sharding(mesh, arg_shapes, result_shape):
    return _rows_only(mesh, arg_shapes)


def partition_total(mesh, arg_shapes, result_shape):
    sharding = _rows_only(mesh, arg_shapes)
    return mesh, lambda x: jnp.cumsum(x, axis=-1), sharding, (sharding,)


running_total.def_partition(
    infer_sharding_from_operands=infer_total_sharding,
    partition=partition_total,
    sharding_rule="i j -> i k",
)
