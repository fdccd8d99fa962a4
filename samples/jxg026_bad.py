"""JXG026 bad (an x64-only defect): bwd casts the cotangent to float32. With 32-bit inputs that changes nothing;
with f64 inputs (x64 on) the gradient silently comes back in float32, losing the precision the user asked for. A
warning, because only users who enable x64 see it."""

import jax
import jax.numpy as jnp

JAXDIAG = {"softplus": {"args": ["f64[3]"]}}


@jax.custom_vjp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


def softplus_fwd(x):
    return jnp.logaddexp(x, 0.0), x


def softplus_bwd(x, g):  # jaxdiag-expect: JXG026
    return ((g * jax.nn.sigmoid(x)).astype(jnp.float32),)


softplus.defvjp(softplus_fwd, softplus_bwd)
