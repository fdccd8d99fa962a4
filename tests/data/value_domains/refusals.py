"""Targets that refuse values their shapes allow, each with right rules: on inputs inside their contract nothing is
wrong. A sign check in a primitive's impl (vector and scalar operands), and an impl that factorises its matrix
on the host (NumPy's Cholesky raises on a matrix that is not positive definite)."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

root_p = Primitive("checked_root")


def _root_impl(x):
    if np.any(np.asarray(x) < 0):
        raise ValueError("checked_root: the input must be non-negative")
    return jnp.sqrt(x)


root_p.def_impl(_root_impl)
root_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(root_p, mlir.lower_fun(jnp.sqrt, multiple_results=False))
batching.primitive_batchers[root_p] = lambda args, dims: (root_p.bind(args[0]), dims[0])
ad.defjvp(root_p, lambda g, x: g / (2.0 * root_p.bind(x)))

# the same check, and a JVP rule that forgets the 1/2: still found on the inputs the impl accepts
bad_root_p = Primitive("checked_root_bad_jvp")
bad_root_p.def_impl(_root_impl)
bad_root_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(bad_root_p, mlir.lower_fun(jnp.sqrt, multiple_results=False))
batching.primitive_batchers[bad_root_p] = lambda args, dims: (bad_root_p.bind(args[0]), dims[0])
ad.defjvp(bad_root_p, lambda g, x: g / bad_root_p.bind(x))  # JXG001


scalar_log_p = Primitive("scalar_log")


def _scalar_log_impl(x):
    assert float(x) > 0, "scalar_log: x must be positive"
    return jnp.log(x)


def _scalar_log_abstract(x):
    if x.shape != ():
        raise TypeError("scalar_log takes a scalar")
    return jax.core.ShapedArray((), x.dtype)


scalar_log_p.def_impl(_scalar_log_impl)
scalar_log_p.def_abstract_eval(_scalar_log_abstract)
mlir.register_lowering(scalar_log_p, mlir.lower_fun(jnp.log, multiple_results=False))
batching.primitive_batchers[scalar_log_p] = lambda args, dims: (jnp.log(args[0]), dims[0])
ad.defjvp(scalar_log_p, lambda g, x: g / x)


host_cholesky_p = Primitive("host_cholesky")


def _host_cholesky_impl(a):
    return jnp.asarray(np.linalg.cholesky(np.asarray(a)).astype(a.dtype))


host_cholesky_p.def_impl(_host_cholesky_impl)
host_cholesky_p.def_abstract_eval(lambda a: jax.core.ShapedArray(a.shape, a.dtype))
mlir.register_lowering(host_cholesky_p, mlir.lower_fun(jnp.linalg.cholesky, multiple_results=False))
batching.primitive_batchers[host_cholesky_p] = lambda args, dims: (
    host_cholesky_p.bind(jnp.moveaxis(args[0], dims[0], 0)), 0)
