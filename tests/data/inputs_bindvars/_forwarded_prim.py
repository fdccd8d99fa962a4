"""A kernel primitive whose impl only forwards `*args, **kwargs` to a shared kernel function under its own name (a
family of per-dtype primitives sharing one implementation); its abstract eval names the operands and the integer
settings (`n_devices`, `n_shift`) that the public function passes by keyword from its static arguments. No call
gives them a value: they are bind params, synthesised as ints."""

import functools

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_scaled_solve_p = Primitive("bindvars_scaled_solve")


def _kernel(name, rhs, diagonal, n_devices, n_shift):
    del name, n_devices  # where it runs and its label: the same values anywhere
    return rhs / (diagonal + n_shift)


def _impl(*args, **kwargs):
    return _kernel("scaled_solve_f32", *args, **kwargs)


@_scaled_solve_p.def_abstract_eval
def _abstract_eval(rhs, diagonal, n_devices, n_shift):
    return ShapedArray(rhs.shape, rhs.dtype)


def _jvp(primals, tangents, *, n_devices, n_shift):
    (rhs, diagonal), (d_rhs, d_diagonal) = primals, tangents
    out = _scaled_solve_p.bind(rhs, diagonal, n_devices=n_devices, n_shift=n_shift)
    d_rhs = jnp.zeros_like(rhs) if type(d_rhs) is ad.Zero else d_rhs
    d_diagonal = jnp.zeros_like(diagonal) if type(d_diagonal) is ad.Zero else d_diagonal
    return out, (d_rhs - out * d_diagonal) / (diagonal + n_shift)


def _batching(batched_args, batch_dims, *, n_devices, n_shift):
    rhs, diagonal = (jnp.moveaxis(a, d, 0) if d is not None else a for a, d in zip(batched_args, batch_dims))
    size = next(a.shape[0] for a, d in zip((rhs, diagonal), batch_dims) if d is not None)
    rhs, diagonal = (a if d is not None else jnp.broadcast_to(a, (size, *a.shape))
                     for a, d in zip((rhs, diagonal), batch_dims))
    return _scaled_solve_p.bind(rhs, diagonal, n_devices=n_devices, n_shift=n_shift), 0


_scaled_solve_p.def_impl(_impl)
mlir.register_lowering(_scaled_solve_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[_scaled_solve_p] = _jvp
batching.primitive_batchers[_scaled_solve_p] = _batching


@functools.partial(jax.jit, static_argnames=["n_devices", "n_shift"])
def scaled_solve(rhs, diagonal, n_devices, n_shift):
    return _scaled_solve_p.bind(rhs, diagonal, n_devices=n_devices, n_shift=n_shift)
