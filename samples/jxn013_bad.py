"""JXN013 bad: a GPU-only kernel on a CPU-only machine. `scale_rows_p` is lowered only for `cuda` (as a Pallas or
Triton kernel is), so its impl raises on CPU and no value can be compared; jaxdiag still traces its batching rule
under `jax.eval_shape(jax.vmap(...))`, which finds that the rule reports dim 1 for an output batched at 0."""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"scale_rows_p": {"args": ["f32[5,3]", "f32[3]"]}}

scale_rows_p = Primitive("scale_rows")


def _scale_rows_kernel(x, w):  # what the GPU kernel computes: x[..., n, d] * w[..., d]
    return x * jnp.expand_dims(w, -2)


def _scale_rows_impl(x, w):  # eager calls compile the primitive for the default device, as a kernel's impl does
    return jax.jit(lambda a, b: scale_rows_p.bind(a, b))(x, w)


def _scale_rows_abstract_eval(x, w):
    return ShapedArray(x.shape, x.dtype)


def _front(v, dim, size):
    return jnp.broadcast_to(v, (size,) + v.shape) if dim is None else jnp.moveaxis(v, dim, 0)


def _scale_rows_batching(args, dims):
    (x, w), (bx, bw) = args, dims
    size = x.shape[bx] if bx is not None else w.shape[bw]
    out = scale_rows_p.bind(_front(x, bx, size), _front(w, bw, size))
    return out, 1  # jaxdiag-expect: JXB004


scale_rows_p.def_impl(_scale_rows_impl)
scale_rows_p.def_abstract_eval(_scale_rows_abstract_eval)
batching.primitive_batchers[scale_rows_p] = _scale_rows_batching
mlir.register_lowering(scale_rows_p, mlir.lower_fun(_scale_rows_kernel, multiple_results=False), platform="cuda")
