"""A primitive whose batching rule rebinds it with the batch axes as a param, and whose transpose rule on that
batched bind maps its per-example rule over the batch with `jax.vmap(..., out_axes=axes)`: an operand the vmap left
unbatched gets `out_axes=None`, while its cotangent (the batched output cotangent passed on) varies over the batch.
Forward, the per-example VJPs and every all-batched VJP are right; `jax.vjp(jax.vmap(add_p.bind, in_axes=(None, 0)))`
raises inside the transpose rule ("at vmap out_axes[0], got axis spec None but output was batched on axis 0")."""

import functools

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

add_p = Primitive("mapped_add")


def _impl(a, b, *, axes=None, size=None):
    if axes is None:
        return a + b
    return jax.vmap(jnp.add, in_axes=axes, axis_size=size)(a, b)


def _abstract_eval(a, b, *, axes=None, size=None):
    if axes is None:
        return ShapedArray(a.shape, a.dtype)
    example = a.shape if axes[0] is None else b.shape[1:]
    return ShapedArray((size, *example), a.dtype)


def _batching(args, dims, *, axes=None, size=None):
    if axes is not None:  # a second vmap: plain jnp (only the first level is under test)
        return jax.vmap(functools.partial(_impl, axes=axes, size=size), in_axes=dims)(*args), 0
    a, b = (jnp.moveaxis(x, d, 0) if d is not None else x for x, d in zip(args, dims))
    n = next(x.shape[0] for x, d in zip((a, b), dims) if d is not None)
    front = tuple(None if d is None else 0 for d in dims)
    return add_p.bind(a, b, axes=front, size=n), 0


def _jvp(primals, tangents, **params):
    tangents = [ad.instantiate_zeros(t) for t in tangents]
    return add_p.bind(*primals, **params), add_p.bind(*tangents, **params)


def _transpose(ct, a, b, *, axes=None, size=None):
    linear = [ad.is_undefined_primal(a), ad.is_undefined_primal(b)]
    if axes is None:
        return [ct if lin else None for lin in linear]
    cts = jax.vmap(lambda c: (c, c), out_axes=axes, axis_size=size)(ct)  # jaxdiag-expect: JXB018
    return [c if lin else None for c, lin in zip(cts, linear)]


add_p.def_impl(_impl)
add_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(add_p, mlir.lower_fun(_impl, multiple_results=False))
batching.primitive_batchers[add_p] = _batching
ad.primitive_jvps[add_p] = _jvp
ad.primitive_transposes[add_p] = _transpose
