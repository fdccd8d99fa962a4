"""JXB017 bad: a row-mean primitive, mean over rows of x * w, whose transpose rule reads the row count off axis 0
of the other operand. Per example (x, w of shape (rows, n)) that is the row count, so jax.grad and every forward
vmap are right; under jax.vjp(jax.vmap(...)) the transpose rule gets the batched operands (batch, rows, n), or
(1, rows, n) for an unbatched one, and divides by the batch size (or by 1) instead: the cotangents are silently
wrong (JXB017; `jaxdiag check` also runs the grad checks, whose JXG016 sees the all-batched case). Plain JAX, with x,
w of shape (5, 4, 3) and a cotangent ct of shape (5, 3):

    f = lambda x, w: row_mean_p.bind(x, w)
    _, pullback = jax.vjp(jax.vmap(f), x, w)
    pullback(ct)[0]          # 4/5 of the stacked per-example cotangents: jax.vjp(f, x[j], w[j]) pulled back ct[j]
"""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"row_mean_p": {"args": ["f32[4,3]", "f32[4,3]"]}}

row_mean_p = Primitive("row_mean")


def _row_mean_impl(x, w):
    return jnp.mean(x * w, axis=-2)


def _row_mean_abstract_eval(x, w):
    shape = jnp.broadcast_shapes(x.shape, w.shape)
    return ShapedArray(shape[:-2] + shape[-1:], x.dtype)


def _row_mean_batching(args, dims):
    (x, w), (bx, bw) = args, dims
    x = jnp.expand_dims(x, 0) if bx is None else jnp.moveaxis(x, bx, 0)
    w = jnp.expand_dims(w, 0) if bw is None else jnp.moveaxis(w, bw, 0)
    return row_mean_p.bind(x, w), 0


def _row_mean_jvp(primals, tangents):
    (x, w), (dx, dw) = primals, tangents
    t = 0.0 if type(dx) is ad.Zero else row_mean_p.bind(dx, w)
    return row_mean_p.bind(x, w), t if type(dw) is ad.Zero else t + row_mean_p.bind(x, dw)


def _sum_to(t, shape):
    t = jnp.sum(t, axis=tuple(range(t.ndim - len(shape))))
    return jnp.sum(t, axis=tuple(i for i, n in enumerate(shape) if n == 1 and t.shape[i] != 1), keepdims=True)


def _row_mean_transpose(ct, x, w):  # jaxdiag-expect: JXB017, JXG016
    linear, other = (x, w) if ad.is_undefined_primal(x) else (w, x)
    grad = _sum_to(ct[..., None, :] * other / other.shape[0], linear.aval.shape)  # axis 0: the rows per example
    return [grad, None] if linear is x else [None, grad]


row_mean_p.def_impl(_row_mean_impl)
row_mean_p.def_abstract_eval(_row_mean_abstract_eval)
mlir.register_lowering(row_mean_p, mlir.lower_fun(_row_mean_impl, multiple_results=False))
batching.primitive_batchers[row_mean_p] = _row_mean_batching
ad.primitive_jvps[row_mean_p] = _row_mean_jvp
ad.primitive_transposes[row_mean_p] = _row_mean_transpose
