"""A JVP rule written for matrices on a primal that also runs on vectors (`a @ b` is a dot product there): the first
rung the primal runs on is outside the rule's contract. And a rule that fails on every shape, whose failure is still
reported on that first rung."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def bilinear(a, b):
    return a @ b


@bilinear.defjvp
def bilinear_jvp(primals, tangents):
    (a, b), (da, db) = primals, tangents
    return bilinear(a, b), jnp.einsum("ij,jk->ik", da, b) + jnp.einsum("ij,jk->ik", a, db)


@jax.custom_jvp
def bilinear_broken(a, b):
    return a @ b


@bilinear_broken.defjvp
def bilinear_broken_jvp(primals, tangents):
    (a, b), (da, db) = primals, tangents
    return bilinear_broken(a, b), jnp.einsum("ij,jk->ik", da, b) + jnp.einsum("ij,jk,kl->il", a, db)
