"""JXG033 bad: the mean of Bernoulli samples with a score-function (REINFORCE) gradient. The primal depends on
`logits` only through sampling, so its autodiff is exactly zero, while bwd returns the estimator
`mean(z * (z - sigmoid(logits)))`. That is right for an estimator and wrong for a derivative: nothing at the rule
says which one is meant.

Plain JAX, with `x = jnp.array([0.3, -1.2, 0.5, 2.0])` and `key = jax.random.key(0)`:
`jax.grad(lambda l: bernoulli_mean.fun(l, key).sum())(x)` is `[0, 0, 0, 0]`, but
`jax.grad(lambda l: bernoulli_mean(l, key).sum())(x)` is nonzero (`[0.22, 0.2, 0.23, 0.11]`)."""

import jax
import jax.numpy as jnp

JAXDIAG = {"bernoulli_mean": {"args": ["f32[4]", "key[]"]}}

SAMPLES = 256


def _draw(logits, key):
    p = jax.nn.sigmoid(logits)
    return jax.random.bernoulli(key, p, (SAMPLES,) + logits.shape).astype(logits.dtype)


@jax.custom_vjp
def bernoulli_mean(logits, key):
    return jnp.mean(_draw(logits, key), axis=0)


def bernoulli_mean_fwd(logits, key):
    z = _draw(logits, key)
    return jnp.mean(z, axis=0), (logits, z)


def bernoulli_mean_bwd(res, g):  # jaxdiag-expect: JXG033
    logits, z = res
    score = z - jax.nn.sigmoid(logits)  # d/dlogits of log p(z | logits)
    return (g * jnp.mean(z * score, axis=0), None)


bernoulli_mean.defvjp(bernoulli_mean_fwd, bernoulli_mean_bwd)
