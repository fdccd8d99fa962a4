"""A custom_jvp whose body hands its operands to a documented function of another module: `sample(x, y, grid)`
returns `grid_sampling.sample_grid(x, y, grid)`, whose docstring states the shapes in one entry for both points
arrays (`x, y: ..., shape (M,)`) and one for the grid (`shape (ny, nx)`). Equal-rank guesses never run it (the
points are 1-D, the grid 2-D); the delegate's statement does. Its JVP rule is right."""

import grid_sampling
import jax
import jax.numpy as jnp


@jax.custom_jvp
def sample(x, y, grid):
    return grid_sampling.sample_grid(x, y, grid)


@sample.defjvp
def _sample_jvp(primals, tangents):
    x, y, grid = primals
    return sample(x, y, grid), sample(x, y, tangents[2])  # linear in the grid; piecewise constant in the points
