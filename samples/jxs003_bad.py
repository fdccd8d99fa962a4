"""JXS003 bad: the Shardy `sharding_rule` says the scanned axis `j` passes through, but a cumulative sum mixes
values along it. `partition` itself is careful (it replicates `j`), so the results are right; the rule is what
Shardy propagates to the rest of the program, and it keeps `j` sharded on the result."""

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


def partition_total(mesh, arg_shapes, result_shape):  # jaxdiag-expect: JXS002 (under Shardy, from the rule)
    sharding = _rows_only(mesh, arg_shapes)
    return mesh, lambda x: jnp.cumsum(x, axis=-1), sharding, (sharding,)


running_total.def_partition(
    infer_sharding_from_operands=infer_total_sharding,
    partition=partition_total,
    sharding_rule="i j -> i j",  # jaxdiag-expect: JXS003
)
