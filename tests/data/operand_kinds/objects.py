"""Operands that are objects made of arrays, and an operand documented as symmetric.

- `sparse_solve(A: CSR, b)`: a custom_vjp of a sparse solve, A documented as symmetric positive definite: its bwd
  solves with A where A.T is meant, which is exact on the documented inputs. An array has no `.todense()`: before,
  no input ran and it was not checked (JXN004).
- `affine(p: Affine, x)`: a custom_jvp of a layer whose parameters are a registered dataclass of arrays; `p.weight`
  of an array raises. `affine_wrong` drops `x` from the weight's tangent.
- `dense_solve(a, b)` / `dense_solve_undocumented(a, b)`: the same solve on a dense matrix, with and without the
  docstring that says `a` is symmetric: only the undocumented one may be judged on a non-symmetric matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax import Array
from jax.experimental.sparse import CSR


@jax.custom_vjp
def sparse_solve(A: CSR, b: Array) -> Array:
    """Solve A x = b.

    Parameters
    ----------
    A :
        The system matrix, symmetric positive definite.
    b :
        The right-hand side.
    """
    return jnp.linalg.solve(A.todense(), b)


def _sparse_solve_fwd(A, b):
    x = sparse_solve(A, b)
    return x, (A, x)


def _sparse_solve_bwd(res, g):
    A, x = res
    lam = jnp.linalg.solve(A.todense(), g)  # A.T is A: the matrix is symmetric
    rows = jnp.repeat(jnp.arange(A.shape[0]), jnp.diff(A.indptr), total_repeat_length=A.data.shape[0])
    return CSR((-lam[rows] * x[A.indices], A.indices, A.indptr), shape=A.shape), lam


sparse_solve.defvjp(_sparse_solve_fwd, _sparse_solve_bwd)


@jax.tree_util.register_dataclass
@dataclass
class Affine:
    weight: Array
    bias: Array


@jax.custom_jvp
def affine(p: Affine, x: Array) -> Array:
    return jnp.tanh(p.weight * x + p.bias)


@affine.defjvp
def _affine_jvp(primals, tangents):
    (p, x), (dp, dx) = primals, tangents
    y = affine(p, x)
    return y, (1 - y**2) * (dp.weight * x + p.weight * dx + dp.bias)


@jax.custom_jvp
def affine_wrong(p: Affine, x: Array) -> Array:
    return jnp.tanh(p.weight * x + p.bias)


@affine_wrong.defjvp
def _affine_wrong_jvp(primals, tangents):  # the weight's tangent is not multiplied by x
    (p, x), (dp, dx) = primals, tangents
    y = affine_wrong(p, x)
    return y, (1 - y**2) * (dp.weight + p.weight * dx + dp.bias)


def _dense_fwd(a, b):
    x = jnp.linalg.solve(a, b)
    return x, (a, x)


def _dense_bwd(res, g):
    a, x = res
    lam = jnp.linalg.solve(a, g)  # a.T is a: the matrix is symmetric
    return -jnp.einsum("i...,j...->ij", lam, x), lam


@jax.custom_vjp
def dense_solve(a: Array, b: Array) -> Array:
    """Solve a x = b.

    Args:
        a (Array): a symmetric matrix.
        b: the right-hand side.
    """
    return jnp.linalg.solve(a, b)


dense_solve.defvjp(_dense_fwd, _dense_bwd)


@jax.custom_vjp
def dense_solve_undocumented(a: Array, b: Array) -> Array:
    return jnp.linalg.solve(a, b)


dense_solve_undocumented.defvjp(_dense_fwd, _dense_bwd)
