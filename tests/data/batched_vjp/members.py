"""Members of the batched-VJP class other than the sample's. A row-mean primitive whose batching rule gives an
unbatched operand a size-1 batch dim, with three transpose rules: one reading the row count off axis 0 of its
operand (right per example, silently wrong on the batched shapes), one broadcasting its cotangent to the size-1
operand's shape (fails), and a correct one (row count off axis -2, cotangents summed over the axes where the operand
has size 1). And a scaling primitive whose batching rule uses `jnp.expand_dims` for an unbatched operand: JAX 0.10
refuses the full-batch cotangent its transpose returns for it, JAX 0.5 sums it (and is right)."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


def _sum_to(t, shape):
    """`t` summed over its leading extra axes and over the axes where `shape` has size 1."""
    t = jnp.sum(t, axis=tuple(range(t.ndim - len(shape))))
    return jnp.sum(t, axis=tuple(i for i, n in enumerate(shape) if n == 1 and t.shape[i] != 1), keepdims=True)


def _row_mean(name, mode):
    p = Primitive(name)

    def impl(x, w):
        return jnp.mean(x * w, axis=-2)

    def abstract(x, w):
        shape = jnp.broadcast_shapes(x.shape, w.shape)
        return ShapedArray(shape[:-2] + shape[-1:], x.dtype)

    def batch(args, dims):
        (x, w), (bx, bw) = args, dims
        x = jnp.expand_dims(x, 0) if bx is None else jnp.moveaxis(x, bx, 0)
        w = jnp.expand_dims(w, 0) if bw is None else jnp.moveaxis(w, bw, 0)
        return p.bind(x, w), 0

    def jvp(primals, tangents):
        (x, w), (dx, dw) = primals, tangents
        t = 0.0 if type(dx) is ad.Zero else p.bind(dx, w)
        return p.bind(x, w), t if type(dw) is ad.Zero else t + p.bind(x, dw)

    def transpose(ct, x, w):
        linear, other = (x, w) if ad.is_undefined_primal(x) else (w, x)
        rows = other.shape[0] if mode == "axis0" else linear.aval.shape[-2]
        grad = ct[..., None, :] * other / rows
        grad = _sum_to(grad, linear.aval.shape) if mode == "summed" else jnp.broadcast_to(grad, linear.aval.shape)
        return [grad, None] if linear is x else [None, grad]

    p.def_impl(impl)
    p.def_abstract_eval(abstract)
    mlir.register_lowering(p, mlir.lower_fun(impl, multiple_results=False))
    batching.primitive_batchers[p] = batch
    ad.primitive_jvps[p] = jvp
    ad.primitive_transposes[p] = transpose
    return p


rows_from_axis0_p = _row_mean("rows_from_axis0", "axis0")
rows_broadcast_to_p = _row_mean("rows_broadcast_to", "broadcast_to")
rows_summed_p = _row_mean("rows_summed", "summed")

expand_scale_p = Primitive("expand_scale")
expand_scale_p.def_impl(lambda x, w: x * w)
expand_scale_p.def_abstract_eval(lambda x, w: ShapedArray(jnp.broadcast_shapes(x.shape, w.shape), x.dtype))
mlir.register_lowering(expand_scale_p, mlir.lower_fun(lambda x, w: x * w, multiple_results=False))


def _expand_batch(args, dims):
    (x, w), (bx, bw) = args, dims
    x = jnp.expand_dims(x, 0) if bx is None else jnp.moveaxis(x, bx, 0)
    w = jnp.expand_dims(w, 0) if bw is None else jnp.moveaxis(w, bw, 0)
    return expand_scale_p.bind(x, w), 0


def _expand_jvp(primals, tangents):
    (x, w), (dx, dw) = primals, tangents
    t = 0.0 if type(dx) is ad.Zero else expand_scale_p.bind(dx, w)
    return expand_scale_p.bind(x, w), t if type(dw) is ad.Zero else t + expand_scale_p.bind(x, dw)


def _expand_transpose(ct, x, w):
    if ad.is_undefined_primal(x):
        return [expand_scale_p.bind(ct, w), None]
    return [None, expand_scale_p.bind(ct, x)]


batching.primitive_batchers[expand_scale_p] = _expand_batch
ad.primitive_jvps[expand_scale_p] = _expand_jvp
ad.primitive_transposes[expand_scale_p] = _expand_transpose
