"""A primitive whose impl calls an FFI target that only a GPU build of its library registers (a cuDSS or cuSPARSE
binding imported on a CPU machine): XLA finds no handler for it on the host, so it cannot run here, while its
abstract eval and batching rule trace as anywhere else."""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.interpreters import batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

diagonal_solve_p = Primitive("ffi_gpu_diagonal_solve")


def _impl(rhs, diagonal):
    kernel = jax.ffi.ffi_call("jaxdiag_fixture_cuda_diagonal_solve", jax.ShapeDtypeStruct(rhs.shape, rhs.dtype))
    return kernel(rhs, diagonal)


def _abstract_eval(rhs, diagonal):
    return ShapedArray(rhs.shape, rhs.dtype)


def _batching(batched_args, batch_dims):
    rhs, diagonal = batched_args
    size = next(a.shape[d] for a, d in zip(batched_args, batch_dims) if d is not None)
    rhs, diagonal = (jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size, *a.shape))
                     for a, d in zip((rhs, diagonal), batch_dims))
    return diagonal_solve_p.bind(rhs, diagonal), 0


diagonal_solve_p.def_impl(_impl)
diagonal_solve_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(diagonal_solve_p, mlir.lower_fun(_impl, multiple_results=False))
batching.primitive_batchers[diagonal_solve_p] = _batching
