"""custom_partitioning ops for tests/test_sharding.py: other members of the classes the JXS002/JXS003/JXS007/JXS008
samples show, each marked where its finding belongs (`# expect: CODE`), and correct ops that must stay clean."""

import jax.numpy as jnp
from jax.experimental.custom_partitioning import custom_partitioning
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def _keep(mesh, sharding, *dims):
    """The sharding with only `dims` kept (the others replicated)."""
    spec = tuple(sharding.spec) + (None,) * 2
    return NamedSharding(mesh, P(*(spec[d] if d in dims else None for d in range(2))))


# An FFT along the first axis: partition gathers axis 0, the rule passes it through (reconciled: a cost).
@custom_partitioning
def fft_rows(x):
    return jnp.fft.fft(x, axis=0)


def _fft_rows_partition(mesh, arg_shapes, result_shape):
    sharding = _keep(mesh, arg_shapes[0].sharding, 1)
    return mesh, lambda x: jnp.fft.fft(x, axis=0), sharding, (sharding,)


fft_rows.def_partition(
    infer_sharding_from_operands=lambda mesh, arg_shapes, result_shape: _keep(mesh, arg_shapes[0].sharding, 1),
    partition=_fft_rows_partition,
    sharding_rule="i j -> i j",  # expect: JXS008
)


# An elementwise op whose partition gathers an axis it never needed: partition is at fault (a cost).
@custom_partitioning
def triple(x):
    return x * 3.0


def _triple_partition(mesh, arg_shapes, result_shape):  # expect: JXS007
    sharding = _keep(mesh, arg_shapes[0].sharding, 0)
    return mesh, lambda x: x * 3.0, sharding, (sharding,)


triple.def_partition(
    infer_sharding_from_operands=lambda mesh, arg_shapes, result_shape: arg_shapes[0].sharding,
    partition=_triple_partition,
    sharding_rule="i j -> i j",
)


# Two operands, a scan along the shared axis, partition trusting the rule: wrong results when it is sharded.
@custom_partitioning
def shifted_total(x, y):
    return jnp.cumsum(x, axis=-1) + y


def _shifted_partition(mesh, arg_shapes, result_shape):  # expect: JXS001, JXS007 (Shardy)
    sharding = arg_shapes[0].sharding
    return mesh, lambda x, y: jnp.cumsum(x, axis=-1) + y, sharding, (sharding, sharding)


shifted_total.def_partition(
    infer_sharding_from_operands=lambda mesh, arg_shapes, result_shape: arg_shapes[0].sharding,
    partition=_shifted_partition,
    sharding_rule="i j, i j -> i j",  # expect: JXS003
)


# A column sum whose partition reduces over the devices itself (an all-reduce inside the lowered function): clean.
@custom_partitioning
def column_sums(x):
    return jnp.sum(x, axis=0)


def _column_partition(mesh, arg_shapes, result_shape):
    spec = tuple(arg_shapes[0].sharding.spec) + (None,) * 2
    rows, cols = spec[0], spec[1]
    import jax

    def lower(x):
        total = jnp.sum(x, axis=0)
        return jax.lax.psum(total, rows) if rows is not None else total

    return mesh, lower, NamedSharding(mesh, P(cols)), (NamedSharding(mesh, P(rows, cols)),)


column_sums.def_partition(
    infer_sharding_from_operands=lambda mesh, arg_shapes, result_shape: NamedSharding(
        mesh, P((tuple(arg_shapes[0].sharding.spec) + (None,) * 2)[1])),
    partition=_column_partition,
    sharding_rule="i j -> j",
)


# GSPMD only (Shardy follows the rule and never calls these callbacks):
# infer declares the scanned axis sharded while partition rightly gathers it: infer is at fault (a cost).
@custom_partitioning
def running_rows(x):
    return jnp.cumsum(x, axis=-1)


def _running_infer(mesh, arg_shapes, result_shape):  # expect: JXS007 (GSPMD)
    return arg_shapes[0].sharding


def _running_partition(mesh, arg_shapes, result_shape):
    sharding = _keep(mesh, arg_shapes[0].sharding, 0)
    return mesh, lambda x: jnp.cumsum(x, axis=-1), sharding, (sharding,)


running_rows.def_partition(
    infer_sharding_from_operands=_running_infer,
    partition=_running_partition,
    sharding_rule="i j -> i k",
)


# propagate_user_sharding, called by GSPMD when the caller constrains the result: correct, so clean.
@custom_partitioning
def doubled(x):
    return x * 2.0


def _doubled_propagate(mesh, user_shape):
    return user_shape.sharding


doubled.def_partition(
    infer_sharding_from_operands=lambda mesh, arg_shapes, result_shape: arg_shapes[0].sharding,
    partition=lambda mesh, arg_shapes, result_shape: (mesh, lambda x: x * 2.0, arg_shapes[0].sharding,
                                                      (arg_shapes[0].sharding,)),
    propagate_user_sharding=_doubled_propagate,
    sharding_rule="i j -> i j",
)
