"""JXG034 bad: soft thresholding whose JVP rule ignores the threshold's tangent. Whether `lam` is a hyperparameter
(then this is intended) or is learned (then its gradient is silently zero) is not said at the rule.

Plain JAX, with `x = jnp.array([0.9, -0.2, -1.5])` and `lam = 0.3`:
`jax.grad(lambda l: jnp.abs(soft_threshold(x, l)).sum())(lam)` is `0.0`, but the same with `soft_threshold.fun`
(autodiff of the undecorated function) is `-2.0`."""

import jax
import jax.numpy as jnp

JAXDIAG = {"soft_threshold": {"args": ["f32[4]", "f32[]@0.1..0.5"]}}


@jax.custom_jvp
def soft_threshold(x, lam):
    return jnp.sign(x) * jnp.maximum(jnp.abs(x) - lam, 0.0)


@soft_threshold.defjvp
def soft_threshold_jvp(primals, tangents):  # jaxdiag-expect: JXG034
    (x, lam), (tx, _) = primals, tangents
    return soft_threshold(x, lam), jnp.where(jnp.abs(x) > lam, tx, 0.0)
