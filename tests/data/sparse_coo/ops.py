"""Sparse kernels over COO triplets (tests/test_sparse_coo.py), as sparse-solver libraries write them.

`coo_solve` solves with the matrix its (rows, cols, vals) describe: on random positions that matrix is singular and
the solve is non-finite, on the positions of a diagonal with positive values it is not; inference must find the
latter (the "diagonal" domain) instead of settling for other shapes. `batched_apply` (made in a factory, reached
through `shifted`) is a custom_vmap whose primal and rule call a host kernel: vmap of it is the rule's business (its
primal's callback needs no vmap_method), but the rule's own callback has none either, so a vmap of a vmap fails
(plain JAX: NotImplementedError)."""

import jax
import jax.numpy as jnp
import numpy as np


def _dense(rows, cols, vals, n):
    return jnp.zeros((n, n), vals.dtype).at[rows, cols].add(vals)


@jax.custom_jvp
def coo_solve(rows, cols, vals, b):
    n = b.shape[0]
    return jnp.linalg.solve(jnp.zeros((n, n), vals.dtype).at[rows, cols].add(vals), b)


@coo_solve.defjvp
def coo_solve_jvp(primals, tangents):
    rows, cols, vals, b = primals
    _, _, t_vals, t_b = tangents
    a = _dense(rows, cols, vals, b.shape[0])
    x = jnp.linalg.solve(a, b)
    return x, jnp.linalg.solve(a, t_b - _dense(rows, cols, t_vals, b.shape[0]) @ x)


def _host_scale(x):
    return np.asarray(2 * x, dtype=x.dtype)


def _host_scale_batch(x):  # one call for a whole batch: the leading axis is the batch
    return np.asarray(2 * x, dtype=x.dtype)


def _make_batched_apply():
    @jax.custom_batching.custom_vmap
    def batched_apply(x):
        return jax.pure_callback(_host_scale, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    @batched_apply.def_vmap
    def _batched_apply_rule(axis_size, in_batched, x):
        (x_batched,) = in_batched
        x = x if x_batched else jnp.broadcast_to(x, (axis_size, *x.shape))
        # the defect: no vmap_method, so an outer vmap cannot batch this call
        return jax.pure_callback(_host_scale_batch, jax.ShapeDtypeStruct(x.shape, x.dtype), x), True

    return batched_apply


def shifted(x):
    """A public function using a custom_vmap made in a factory: vmap of it goes through that rule."""
    return _make_batched_apply()(x) + 1.0
