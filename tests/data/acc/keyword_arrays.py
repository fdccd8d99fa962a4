"""A public function whose second array is keyword-only (`apply(x, *, weights)`), building its custom_vjp at run
time around it: the rule is reached only by running `apply`, which needed a value for `weights` that no call site
gives. An array-annotated keyword-only argument is now drawn like a positional operand."""

import jax
import jax.numpy as jnp


def apply(x: jax.Array, *, weights: jax.Array, clip: bool) -> jax.Array:
    """Weighted values, optionally clipped."""

    @jax.custom_vjp
    def scaled(v):
        return v * weights

    def scaled_fwd(v):
        return scaled(v), None

    def scaled_bwd(_, g):
        return (g * weights,)

    scaled.defvjp(scaled_fwd, scaled_bwd)
    out = scaled(x)
    return jnp.clip(out, -1.0, 1.0) if clip else out
