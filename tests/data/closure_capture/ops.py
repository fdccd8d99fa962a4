"""custom_vjp rules made inside a public function on every call, closing over an array the function computed
(tests/test_disc.py), as a sparse solver closes over its index pattern. The instance met while tracing the function
holds that trace's tracers: it must be checked as the eager run makes it. `shrink_wrong`'s bwd drops the factor
`d` of the cotangent."""

import jax
import jax.numpy as jnp


def shrink(idx, vals, b):
    """Divides `b` by a positive diagonal built from `vals` at the int32 positions `idx`."""
    d = jnp.ones(b.shape[-1]).at[idx].add(jnp.abs(vals)) + 1.0

    @jax.custom_vjp
    def apply(b):
        return b / d

    def fwd(b):
        return apply(b), None

    def bwd(_, g):
        return (g / d,)

    apply.defvjp(fwd, bwd)
    return apply(b)


def shrink_wrong(idx, vals, b):
    """Divides `b` by a positive diagonal built from `vals` at the int32 positions `idx`."""
    d = jnp.ones(b.shape[-1]).at[idx].add(jnp.abs(vals)) + 1.0

    @jax.custom_vjp
    def apply_wrong(b):
        return b / d

    def fwd(b):
        return apply_wrong(b), None

    def bwd(_, g):
        return (g,)  # the defect: the factor 1 / d is dropped

    apply_wrong.defvjp(fwd, bwd)
    return apply_wrong(b)
