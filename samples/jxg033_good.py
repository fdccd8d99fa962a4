"""JXG033 good: the same score-function estimator, declared at the rule: `# jaxdiag: intended[JXG033]` on bwd's def
line says that its gradient is an estimator on purpose, and silences that finding only (a wrong formula elsewhere
in the rule would still be reported)."""

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


def bernoulli_mean_bwd(res, g):  # jaxdiag: intended[JXG033]
    logits, z = res
    score = z - jax.nn.sigmoid(logits)  # d/dlogits of log p(z | logits)
    return (g * jnp.mean(z * score, axis=0), None)


bernoulli_mean.defvjp(bernoulli_mean_fwd, bernoulli_mean_bwd)
