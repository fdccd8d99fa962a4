"""A solve with the inverse cached next to its matrix: the function never reads the matrix, the JVP differentiates
through it and gives the cached inverse no tangent. Right wherever the inverse is the matrix's, as every caller passes
it; on independent draws of the two no JVP could match, so no verdict is given there."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def solve_cached(matrix, inverse, rhs):
    del matrix  # the cached inverse stands for it
    return inverse @ rhs


@solve_cached.defjvp
def solve_cached_jvp(primals, tangents):
    matrix, inverse, rhs = primals
    d_matrix, _, d_rhs = tangents
    solution = solve_cached(matrix, inverse, rhs)
    return solution, inverse @ (d_rhs - d_matrix @ solution)
