"""A kernel primitive whose impl only forwards `*args, **kwargs` to a shared kernel function under its own name (a
family of per-dtype primitives sharing one implementation); its abstract eval names the operands and the integer
settings (`device_id`, `mode_id`) that the public function passes by keyword from its static arguments. No call
gives them a value: they are bind params, synthesised as ints."""

import functools

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

_scaled_solve_p = Primitive("bindvars_scaled_solve")


def _kernel(name, rhs, diagonal, device_id, mode_id):
    del name, device_id  # where it runs and its label: the same values anywhere
    return rhs / (diagonal + mode_id)


def _impl(*args, **kwargs):
    return _kernel("scaled_solve_f32", *args, **kwargs)


@_scaled_solve_p.def_abstract_eval
def _abstract_eval(rhs, diagonal, device_id, mode_id):
    return ShapedArray(rhs.shape, rhs.dtype)


def _jvp(primals, tangents, *, device_id, mode_id):
    (rhs, diagonal), (d_rhs, d_diagonal) = primals, tangents
    out = _scaled_solve_p.bind(rhs, diagonal, device_id=device_id, mode_id=mode_id)
    d_rhs = jnp.zeros_like(rhs) if type(d_rhs) is ad.Zero else d_rhs
    d_diagonal = jnp.zeros_like(diagonal) if type(d_diagonal) is ad.Zero else d_diagonal
    return out, (d_rhs - out * d_diagonal) / (diagonal + mode_id)


def _batching(batched_args, batch_dims, *, device_id, mode_id):
    rhs, diagonal = (jnp.moveaxis(a, d, 0) if d is not None else a for a, d in zip(batched_args, batch_dims))
    size = next(a.shape[0] for a, d in zip((rhs, diagonal), batch_dims) if d is not None)
    rhs, diagonal = (a if d is not None else jnp.broadcast_to(a, (size, *a.shape))
                     for a, d in zip((rhs, diagonal), batch_dims))
    return _scaled_solve_p.bind(rhs, diagonal, device_id=device_id, mode_id=mode_id), 0


_scaled_solve_p.def_impl(_impl)
mlir.register_lowering(_scaled_solve_p, mlir.lower_fun(_impl, multiple_results=False))
ad.primitive_jvps[_scaled_solve_p] = _jvp
batching.primitive_batchers[_scaled_solve_p] = _batching


@functools.partial(jax.jit, static_argnames=["device_id", "mode_id"])
def scaled_solve(rhs, diagonal, device_id, mode_id):
    return _scaled_solve_p.bind(rhs, diagonal, device_id=device_id, mode_id=mode_id)
