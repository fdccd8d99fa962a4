"""Two batching rules that share a helper, the pattern of a library that supports vmap over its data but not over its
sampling grid: `_lift` refuses a batched grid with `raise NotImplementedError(...)` (a deliberate refusal of some
batch dims while the data batches: a JXN020 note), while `_check_rank`'s ValueError catches what the second rule
forgot to handle (an accident, JXB006). `_pin` refuses the same way with a ValueError whose text says so ("cannot be
vectorized"), as sparse solvers refuse a batched index array; `_fixed_grid` with one that asks its users to open an
issue for the case (a kernel configured per operand with the ones it batches), while `_invariant`'s "please open an
issue" follows "this is a bug": an accident again. `_misplaced_rule` refuses the grid as `_lift` does, and returns
the data's batch at dim 0 without moving it there: a defect in what it accepts, reported beside the note."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir


def _impl(data, grid):
    return data * jnp.sum(grid)


def _abstract(data, grid):
    return ShapedArray(data.shape, data.dtype)


def _lift(grid, grid_dim):
    if grid_dim is not None:
        raise NotImplementedError("vmap over the sampling grid is not supported; vmap over the data only")
    return grid


def _pin(grid, grid_dim):
    if grid_dim is not None:
        msg = "the grid cannot be vectorized."
        raise ValueError(msg)
    return grid


def _fixed_grid(grid, grid_dim):
    if grid_dim is not None:
        raise ValueError(f"operand 1 is batched along axis {grid_dim}, but this kernel keeps its grid unbatched. "
                         "Please open an issue if you need it.")
    return grid


def _invariant(grid, grid_dim):
    if grid_dim is not None:
        raise ValueError("a batched grid should never reach this rule: this is a bug, please open an issue")
    return grid


def _check_rank(data, rank):
    if data.ndim != rank:
        raise ValueError(f"expected data of rank {rank}, got {data.ndim}")
    return data


def _refusing_rule(args, dims):
    data, grid = args
    data_dim, grid_dim = dims
    grid = _lift(grid, grid_dim)
    data = jnp.moveaxis(data, data_dim, 0) if data_dim is not None else data
    return refusing_p.bind(data, grid), 0 if data_dim is not None else None


def _pinning_rule(args, dims):
    data, grid = args
    data_dim, grid_dim = dims
    grid = _pin(grid, grid_dim)
    data = jnp.moveaxis(data, data_dim, 0) if data_dim is not None else data
    return pinning_p.bind(data, grid), 0 if data_dim is not None else None


def _requesting_rule(args, dims):
    data, grid = args
    data_dim, grid_dim = dims
    grid = _fixed_grid(grid, grid_dim)
    data = jnp.moveaxis(data, data_dim, 0) if data_dim is not None else data
    return requesting_p.bind(data, grid), 0 if data_dim is not None else None


def _buggy_rule(args, dims):
    data, grid = args
    data_dim, grid_dim = dims
    grid = _invariant(grid, grid_dim)
    data = jnp.moveaxis(data, data_dim, 0) if data_dim is not None else data
    return buggy_p.bind(data, grid), 0 if data_dim is not None else None


def _misplaced_rule(args, dims):
    data, grid = args
    data_dim, grid_dim = dims
    grid = _lift(grid, grid_dim)
    return misplaced_p.bind(data, grid), 0 if data_dim is not None else None  # the batch axis was never moved to 0


def _accidental_rule(args, dims):
    data, grid = args
    data_dim, _ = dims
    _check_rank(data, 1)  # forgets that the batch adds an axis
    return accidental_p.bind(data, grid), data_dim


def _primitive(name, rule):
    prim = Primitive(name)
    prim.def_impl(_impl)
    prim.def_abstract_eval(_abstract)
    batching.primitive_batchers[prim] = rule
    mlir.register_lowering(prim, mlir.lower_fun(_impl, multiple_results=False))
    return prim


refusing_p = _primitive("refusing", _refusing_rule)
accidental_p = _primitive("accidental", _accidental_rule)
pinning_p = _primitive("pinning", _pinning_rule)
requesting_p = _primitive("requesting", _requesting_rule)
buggy_p = _primitive("buggy", _buggy_rule)
misplaced_p = _primitive("misplaced", _misplaced_rule)
