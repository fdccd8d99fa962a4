"""The documented function `delegated_doc.sample` hands its operands to."""

import jax.numpy as jnp


def sample_grid(x, y, grid):
    """Nearest-lower-cell linear weights of a grid at points.

    Args:
        x, y: Points in grid units, shape (M,)
        grid: Values on the grid, shape (ny, nx)

    Returns:
        Values at the points, shape (M,)
    """
    if x.ndim != 1 or y.shape != x.shape:
        raise ValueError(f"x and y must be 1-D and alike, got {x.shape} and {y.shape}")
    ny, nx = grid.shape
    i = jnp.clip(jnp.floor(y).astype(jnp.int32), 0, ny - 1)
    j = jnp.clip(jnp.floor(x).astype(jnp.int32), 0, nx - 1)
    return grid[i, j]
