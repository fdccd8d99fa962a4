"""Primitives whose rules re-enter themselves: the batching rule of `tile_p` vmaps its own primitive (vmap calls the
rule again, without end), its twin `tile_ok_p` loops over the examples with `jax.lax.map`; the JVP rule of
`cube_p` takes `jax.jvp` of its own primitive.

Plain JAX: `jax.vmap(tile_p.bind)(jnp.ones((5, 3)))` raises RecursionError; the same for `tile_ok_p` works;
`jax.jvp(cube_p.bind, (x,), (t,))` raises RecursionError."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

tile_p = Primitive("self_vmap_tile")
tile_p.def_impl(lambda x: jnp.concatenate([x, x], axis=-1))
tile_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape[:-1] + (2 * x.shape[-1],), x.dtype))
mlir.register_lowering(tile_p, mlir.lower_fun(lambda x: jnp.concatenate([x, x], axis=-1), multiple_results=False))


def _tile_batch(args, dims):
    (x,), (d,) = args, dims
    moved = batching.bdim_at_front(x, d, x.shape[d])
    return jax.vmap(tile_p.bind)(moved), 0  # the bug: vmap of its own primitive calls this rule again


batching.primitive_batchers[tile_p] = _tile_batch

tile_ok_p = Primitive("self_vmap_tile_ok")
tile_ok_p.def_impl(lambda x: jnp.concatenate([x, x], axis=-1))
tile_ok_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape[:-1] + (2 * x.shape[-1],), x.dtype))
mlir.register_lowering(tile_ok_p, mlir.lower_fun(lambda x: jnp.concatenate([x, x], axis=-1),
                                                 multiple_results=False))


def _tile_ok_batch(args, dims):
    (x,), (d,) = args, dims
    moved = batching.bdim_at_front(x, d, x.shape[d])
    return jax.lax.map(tile_ok_p.bind, moved), 0  # one example at a time, unbatched: no re-entry


batching.primitive_batchers[tile_ok_p] = _tile_ok_batch

cube_p = Primitive("self_jvp_cube")
cube_p.def_impl(lambda x: x * x * x)
cube_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(cube_p, mlir.lower_fun(lambda x: x * x * x, multiple_results=False))
batching.defvectorized(cube_p)


def _cube_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return jax.jvp(cube_p.bind, (x,), (t,))  # the bug: differentiates its own primitive, which calls this rule


ad.primitive_jvps[cube_p] = _cube_jvp
