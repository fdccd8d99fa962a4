"""A CSR matrix-vector kernel as a primitive: its bind param `shape` comes from a sparse-matrix object
(`shape=self.shape`), and its integer operands are a structure (`indptr` rising, `indices` within the columns)."""

import functools

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


def _spmv(data, indices, indptr, v, *, shape):
    rows = jnp.repeat(jnp.arange(shape[0]), jnp.diff(indptr), total_repeat_length=indices.shape[0])
    return jax.ops.segment_sum(data * v[indices], rows, num_segments=shape[0])


def make_spmv(name, data_tangent=True):
    prim = Primitive(name)
    prim.def_impl(_spmv)
    prim.def_abstract_eval(lambda data, indices, indptr, v, *, shape: jax.core.ShapedArray((shape[0],), data.dtype))
    mlir.register_lowering(prim, mlir.lower_fun(_spmv, multiple_results=False))

    def jvp(primals, tangents, *, shape):  # jaxdiag-expect: JXG034
        data, indices, indptr, v = primals
        t_data, _, _, t_v = (jnp.zeros_like(p) if type(t) is ad.Zero else t for p, t in zip(primals, tangents))
        out = prim.bind(data, indices, indptr, v, shape=shape)
        tangent = _spmv(data, indices, indptr, t_v, shape=shape)
        if data_tangent:
            tangent = tangent + _spmv(t_data, indices, indptr, v, shape=shape)
        return out, tangent

    def batch(args, dims, *, shape):  # jaxdiag-expect: JXB017
        return jax.vmap(functools.partial(_spmv, shape=shape), in_axes=dims)(*args), 0

    ad.primitive_jvps[prim] = jvp
    batching.primitive_batchers[prim] = batch
    return prim
