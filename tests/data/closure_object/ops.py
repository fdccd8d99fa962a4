"""A custom_vjp made on every call, taking its operand as a list (a pytree argument, so jaxdiag checks it through a
flat view of the list) and closing over an object of arrays the function computed (`held = Scaled(...)`). Tracing
the function leaves that object holding tracers of the trace; the same rule made by the eager run holds concrete
arrays, and is the one to check (its bwd is right: the factor does not depend on `x`'s values)."""

from dataclasses import dataclass

import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclass
class Scaled:
    factor: jax.Array


def rescale(x: jax.Array) -> jax.Array:
    held = Scaled(jnp.ones_like(x) * 2.0)

    @jax.custom_vjp
    def apply(params):
        return params[0] * held.factor

    def apply_fwd(params):
        return params[0] * held.factor, None

    def apply_bwd(_, g):
        return ([g * held.factor],)

    apply.defvjp(apply_fwd, apply_bwd)
    return apply([x])
