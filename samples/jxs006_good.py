"""JXS006 good: the callbacks read the leading dimension's sharding whatever it is (replicated included) and
replicate the normalised axis."""

import jax.numpy as jnp
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

JAXDIAG = {"row_norms": {"args": ["f32[8,16]"]}}


@custom_partitioning
def row_norms(x):
    return x / jnp.linalg.norm(x, axis=-1, keepdims=True)


def _rows_only(mesh, arg_shapes):
    spec = tuple(arg_shapes[0].sharding.spec)
    return NamedSharding(mesh, P(spec[0] if spec else None, None))


def infer_norms_sharding(mesh, arg_shapes, result_shape):
    return _rows_only(mesh, arg_shapes)


def partition_norms(mesh, arg_shapes, result_shape):
    sharding = _rows_only(mesh, arg_shapes)
    return mesh, lambda x: x / jnp.linalg.norm(x, axis=-1, keepdims=True), sharding, (sharding,)


row_norms.def_partition(
    infer_sharding_from_operands=infer_norms_sharding,
    partition=partition_norms,
    sharding_rule="i j -> i k",
)
