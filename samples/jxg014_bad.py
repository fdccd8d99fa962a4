"""JXG014 bad: a bwd that clips the gradient of sin to [-0.5, 0.5]. That is what gradient clipping does on purpose,
so it is a warning, not an error: where the clip applies the gradient has the true sign and a smaller magnitude.
`round_ste` is a straight-through estimator (the tangent passes through round unchanged), also a
warning. A deliberate surrogate is silenced with `# jaxdiag: ignore[JXG014]` on the bwd's def line."""

import jax
import jax.numpy as jnp

JAXDIAG = {"clipped_sin": {"args": ["f32[6]"]}, "round_ste": {"args": ["f32[6]"]}}


@jax.custom_vjp
def clipped_sin(x):
    return jnp.sin(x)


def clipped_sin_fwd(x):
    return jnp.sin(x), x


def clipped_sin_bwd(x, g):  # jaxdiag-expect: JXG014
    return (jnp.clip(g * jnp.cos(x), -0.5, 0.5),)


clipped_sin.defvjp(clipped_sin_fwd, clipped_sin_bwd)


@jax.custom_jvp
def round_ste(x):
    return jnp.round(x)


@round_ste.defjvp
def round_ste_jvp(primals, tangents):  # jaxdiag-expect: JXG014
    (x,), (t,) = primals, tangents
    return jnp.round(x), t
