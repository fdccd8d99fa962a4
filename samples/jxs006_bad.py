"""JXS006 bad: `partition` assumes exactly one dimension of its operand is sharded (tuple unpacking), so it raises
`ValueError` inside XLA's compiler whenever the input arrives replicated or sharded on two dimensions."""

import jax.numpy as jnp
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

JAXDIAG = {"row_norms": {"args": ["f32[8,16]"]}}


@custom_partitioning
def row_norms(x):
    return x / jnp.linalg.norm(x, axis=-1, keepdims=True)


def infer_norms_sharding(mesh, arg_shapes, result_shape):
    spec = tuple(arg_shapes[0].sharding.spec)
    return NamedSharding(mesh, P(spec[0] if spec else None, None))


def partition_norms(mesh, arg_shapes, result_shape):  # jaxdiag-expect: JXS006, JXS007 (wrong axis picked)
    (row_axis,) = [a for a in arg_shapes[0].sharding.spec if a is not None]  # exactly one sharded dimension
    sharding = NamedSharding(mesh, P(row_axis, None))
    return mesh, lambda x: x / jnp.linalg.norm(x, axis=-1, keepdims=True), sharding, (sharding,)


row_norms.def_partition(
    infer_sharding_from_operands=infer_norms_sharding,
    partition=partition_norms,
    sharding_rule="i j -> i k",
)
