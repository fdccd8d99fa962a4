"""Primitives taking a data array and a sample grid, each bound by a thin public wrapper (`resample`, `warp`). The
batching rule refuses a batched grid and the JVP treats the grid as a constant, both on purpose where no use of the
package batches or differentiates the grid: every call of `resample` passes a grid computed from int and str
settings (`sample_grid(n, scheme)`). The wrappers' own parameters say nothing of that; their callers do. `warp` has
the same rules, but one of its callers shifts the grid by an array it is given: that use batches and differentiates
the grid, and the rules refusing both are reported there."""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


def _impl(data, grid):
    return data * jnp.cos(grid)


def _build(name):
    prim = Primitive(name)
    prim.def_impl(_impl)
    prim.def_abstract_eval(lambda data, grid: ShapedArray(data.shape, data.dtype))
    mlir.register_lowering(prim, mlir.lower_fun(_impl, multiple_results=False))

    def jvp(primals, tangents):
        data, grid = primals
        data_dot, _ = tangents  # the grid is configuration: never differentiated
        out = prim.bind(data, grid)
        if type(data_dot) is ad.Zero:
            return out, ad.Zero.from_primal_value(out)
        return out, prim.bind(data_dot, grid)

    def transpose(ct, data, grid):
        return (ad.Zero(data.aval) if type(ct) is ad.Zero else prim.bind(ct, grid)), None

    def batch(args, dims):
        data, grid = args
        data_dim, grid_dim = dims
        if grid_dim is not None:
            raise NotImplementedError("vmap over the grid is not supported (it is fixed by the sampling scheme)")
        return prim.bind(jnp.moveaxis(data, data_dim, 0), grid[None]), 0

    ad.primitive_jvps[prim] = jvp
    ad.primitive_transposes[prim] = transpose
    batching.primitive_batchers[prim] = batch
    return prim


resample_p = _build("resample")
warp_p = _build("warp")


def resample(data, grid):
    return resample_p.bind(data, grid)


def warp(data, grid):
    return warp_p.bind(data, grid)


def sample_grid(n: int, scheme: str) -> jax.Array:
    step = jnp.pi / n if scheme == "uniform" else jnp.pi / (n + 1)
    return jnp.arange(n, dtype=jnp.float32) * step


def transform(data, n: int, scheme: str = "uniform"):
    grid = sample_grid(n, scheme)
    return resample(data, grid)


def inverse(data, n: int):
    return resample(data, sample_grid(n, "shifted")) / 2.0


def warped(data, n: int, shift):
    return warp(data, sample_grid(n, "uniform") + shift)
