"""A primitive whose JVP rule vmaps over `primals` with a tuple in_axes (as equinox's `_vprim_jvp` does with its
`__batch_axes`). JAX calls a JVP rule with tuples of primals and tangents, so the tuple in_axes is a prefix of
them; a list would not be."""

import jax
import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

pair_mul_p = Primitive("pair_mul")


def pair_mul_impl(x, y):
    return x * y


def pair_mul_jvp(primals, tangents):
    def one(p, t):
        (x, y), (tx, ty) = p, t
        return x * y, tx * y + x * ty

    dense = [ad.instantiate_zeros(t) for t in tangents]
    return jax.vmap(one, in_axes=((0, 0), 0))(primals, dense)


pair_mul_p.def_impl(pair_mul_impl)
pair_mul_p.def_abstract_eval(lambda x, y: jax.core.ShapedArray(x.shape, x.dtype))
ad.primitive_jvps[pair_mul_p] = pair_mul_jvp


def pair_mul_batch(args, dims):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    moved = [jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size,) + a.shape)
             for a, d in zip(args, dims)]
    return pair_mul_p.bind(*moved), 0


batching.primitive_batchers[pair_mul_p] = pair_mul_batch
mlir.register_lowering(pair_mul_p, mlir.lower_fun(pair_mul_impl, multiple_results=False))


def pair_mul(x, y):
    return pair_mul_p.bind(x, y)


def square_sum(x):
    return jnp.sum(pair_mul_p.bind(x, x))
