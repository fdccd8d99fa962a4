"""Two primitives taking a callable bind param `fn`: `scale_p`'s rules are correct, `shift_p`'s batching rule
adds one to every batched result (a per-example loop disagrees). And a primitive bound only under
differentiation: `inner_p`, the directional derivative of `fn`, which only the JVP rule of the custom_jvp `outer`
binds (correct rules)."""

from functools import partial

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

scale_p = Primitive("carrytwo_scale")
shift_p = Primitive("carrytwo_shift")


def _scale_impl(x, *, fn):
    return 2.0 * fn(x)


def _shift_impl(x, *, fn):
    return fn(x) + 1.0


def _same_shape(x, *, fn):
    return jax.core.ShapedArray(x.shape, x.dtype)


def _scale_jvp(primals, tangents, *, fn):
    (x,), (t,) = primals, tangents
    t = ad.instantiate_zeros(t)
    return scale_p.bind(x, fn=fn), 2.0 * jax.jvp(fn, (x,), (t,))[1]


def _shift_jvp(primals, tangents, *, fn):
    (x,), (t,) = primals, tangents
    t = ad.instantiate_zeros(t)
    return shift_p.bind(x, fn=fn), jax.jvp(fn, (x,), (t,))[1]


def _scale_batch(args, dims, *, fn):
    return scale_p.bind(args[0], fn=fn), dims[0]


def _shift_batch(args, dims, *, fn):  # jaxdiag-expect: JXB005
    return shift_p.bind(args[0], fn=fn) + 1.0, dims[0]  # adds one: wrong values


scale_p.def_impl(_scale_impl)
scale_p.def_abstract_eval(_same_shape)
ad.primitive_jvps[scale_p] = _scale_jvp
batching.primitive_batchers[scale_p] = _scale_batch
mlir.register_lowering(scale_p, mlir.lower_fun(_scale_impl, multiple_results=False))

shift_p.def_impl(_shift_impl)
shift_p.def_abstract_eval(_same_shape)
ad.primitive_jvps[shift_p] = _shift_jvp
batching.primitive_batchers[shift_p] = _shift_batch
mlir.register_lowering(shift_p, mlir.lower_fun(_shift_impl, multiple_results=False))


def scale(fn, x):
    return scale_p.bind(x, fn=fn)


def shift(fn, x):
    return shift_p.bind(x, fn=fn)


inner_p = Primitive("carrytwo_inner")


def _inner_impl(x, t, *, fn):
    return jax.jvp(fn, (x,), (t,))[1]


def _inner_abstract(x, t, *, fn):
    return jax.core.ShapedArray(x.shape, x.dtype)


def _inner_jvp(primals, tangents, *, fn):
    primals, tangents = tuple(primals), tuple(ad.instantiate_zeros(t) for t in tangents)
    return inner_p.bind(*primals, fn=fn), jax.jvp(partial(_inner_impl, fn=fn), primals, tangents)[1]


def _inner_batch(args, dims, *, fn):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    x, t = (jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size,) + a.shape)
            for a, d in zip(args, dims))
    return inner_p.bind(x, t, fn=fn), 0


def _inner_transpose(ct, x, t, *, fn):  # linear in the tangent `t` only
    ct = ad.instantiate_zeros(ct)
    return None, jax.vjp(fn, x)[1](ct)[0]


inner_p.def_impl(_inner_impl)
inner_p.def_abstract_eval(_inner_abstract)
ad.primitive_jvps[inner_p] = _inner_jvp
ad.primitive_transposes[inner_p] = _inner_transpose
batching.primitive_batchers[inner_p] = _inner_batch
mlir.register_lowering(inner_p, mlir.lower_fun(_inner_impl, multiple_results=False))


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def outer(fn, x):
    return fn(x)


@outer.defjvp
def _outer_jvp(fn, primals, tangents):
    (x,), (t,) = primals, tangents
    return fn(x), inner_p.bind(x, t, fn=fn)
