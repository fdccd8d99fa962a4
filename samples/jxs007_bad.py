"""JXS007 bad: `infer_sharding_from_operands` (and the Shardy rule) declare the result sharded like the input, which
is right for an elementwise op, but `partition` returns a replicated result (it lowers on whole arrays). The numbers
are right, yet XLA gathers the operand and re-slices the result around every call to reconcile the two.

Plain JAX on 8 CPU devices::

    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("a", "b"))
    x = jax.device_put(np.ones((8, 16), np.float32), NamedSharding(mesh, P("a", None)))
    compiled = jax.jit(scale).lower(x).compile()
    np.array_equal(compiled(x), 2 * np.ones((8, 16)))   # True: exact
    "all-gather" in compiled.as_text()                   # True: 8x16 floats gathered onto every device
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


def partition_scale(mesh, arg_shapes, result_shape):  # jaxdiag-expect: JXS007
    replicated = NamedSharding(mesh, P())

    def lower(x):
        return x * 2.0

    return mesh, lower, replicated, (replicated,)


scale.def_partition(
    infer_sharding_from_operands=infer_scale_sharding,
    partition=partition_scale,
    sharding_rule="i j -> i j",
)
