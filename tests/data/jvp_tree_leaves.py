"""custom_jvp outputs whose pytrees hold None and integer auxiliaries (equinox's `_record_symbolic_zeros` in
checkpointed while loops, optimistix's `_implicit_impl` residual): JAX treats None as an empty subtree on both
sides and wants a float0 (or symbolic zero) tangent for an integer output. `none_tangent` is the broken
counterpart: a None tangent for an array output, which JAX rejects."""

import jax
import jax.numpy as jnp
import numpy as np


@jax.custom_jvp
def record_zeros(parts):
    return parts


def record_zeros_jvp(primals, tangents):
    (primals,), (tangents,) = primals, tangents
    return primals, tangents


record_zeros.defjvp(record_zeros_jvp, symbolic_zeros=True)


def use_record_zeros(x):
    return record_zeros((x, None))[0] * 2.0


@jax.custom_jvp
def solve_with_steps(x):
    return x * 2.0, (jnp.int32(3), None)


@solve_with_steps.defjvp
def solve_with_steps_jvp(primals, tangents):
    (x,), (tx,) = primals, tangents
    root, residual = solve_with_steps(x)
    steps_tangent = np.zeros((), jax.dtypes.float0)
    return (root, residual), (tx * 2.0, (steps_tangent, None))


def use_solve_with_steps(x):
    return solve_with_steps(x)[0].sum()


@jax.custom_jvp
def none_tangent(x):
    return x * 2.0, None


@none_tangent.defjvp
def none_tangent_jvp(primals, tangents):  # jaxdiag-expect: JXG007
    (x,), _ = primals, tangents
    return none_tangent(x), (None, None)
