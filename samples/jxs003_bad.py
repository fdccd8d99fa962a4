"""JXS003 bad: the Shardy `sharding_rule` says the scanned axis `j` passes through, but a cumulative sum mixes values
along it. `partition` trusts what the partitioner hands it and lowers the cumsum on each device's slice, so with the
last axis sharded every device sums only its own quarter of each row.

Plain JAX on 8 CPU devices::

    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("a", "b"))
    x = np.ones((8, 16), np.float32)
    jax.jit(running_total)(jax.device_put(x, NamedSharding(mesh, P(None, "b"))))[0]
    # [1. 2. 3. 4. 1. 2. 3. 4. ...], where np.cumsum(x, axis=-1)[0] is [1. 2. ... 16.]
"""

import jax.numpy as jnp
from jax.experimental.custom_partitioning import custom_partitioning

JAXDIAG = {"running_total": {"args": ["f32[8,16]"]}}


@custom_partitioning
def running_total(x):
    return jnp.cumsum(x, axis=-1)


def infer_total_sharding(mesh, arg_shapes, result_shape):
    return arg_shapes[0].sharding


def partition_total(mesh, arg_shapes, result_shape):  # jaxdiag-expect: JXS001
    sharding = arg_shapes[0].sharding
    return mesh, lambda x: jnp.cumsum(x, axis=-1), sharding, (sharding,)


running_total.def_partition(
    infer_sharding_from_operands=infer_total_sharding,
    partition=partition_total,
    sharding_rule="i j -> i j",  # jaxdiag-expect: JXS003
)
