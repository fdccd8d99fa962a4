"""A rule whose only caller hands it a matrix built, in a loop, from an integer: at that call JAX perturbs nothing the
rule receives. Checked there with those operands left unperturbed, every derivative check skipped and the rule was
"verified"; its JVP is twice the derivative, which perturbing the caller's matrix shows."""

import jax
import jax.numpy as jnp


@jax.custom_jvp
def soft_clip(x):
    return jnp.tanh(x)


@soft_clip.defjvp
def soft_clip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return soft_clip(x), 2.0 * (1.0 - jnp.tanh(x) ** 2) * t


def transition_matrix(order: int):
    """The package's caller: the matrix depends on `order` only, its rows filled in a loop."""
    def row(i, steps):
        return steps.at[i].set(jnp.arange(order, dtype=jnp.float32) * (i + 1) / (order * order))

    return soft_clip(jax.lax.fori_loop(0, order, row, jnp.zeros((order, order), jnp.float32)))
