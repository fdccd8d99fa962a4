"""A distillation loss whose bwd gives the teacher no gradient: one says so in its docstring (`teacher → 0`), the
other does not (a teacher that should train would silently never learn)."""

import jax
import jax.numpy as jnp


def _kl(student, teacher):
    log_p_t = jax.nn.log_softmax(teacher)
    return jnp.sum(jnp.exp(log_p_t) * (log_p_t - jax.nn.log_softmax(student)))


def _fwd(student, teacher):
    return _kl(student, teacher), (student, teacher)


def _bwd_documented(res, g):
    """Analytic backward: ``dstudent = (p_s - p_t) * g``; teacher → 0."""
    student, teacher = res
    return (jax.nn.softmax(student) - jax.nn.softmax(teacher)) * g, jnp.zeros_like(teacher)


def _bwd_silent(res, g):
    student, teacher = res
    return (jax.nn.softmax(student) - jax.nn.softmax(teacher)) * g, jnp.zeros_like(teacher)


distill = jax.custom_vjp(_kl)
distill.defvjp(_fwd, _bwd_documented)

distill_silent = jax.custom_vjp(_kl)
distill_silent.defvjp(_fwd, _bwd_silent)


@jax.custom_jvp
def scaled_tanh(x, scale):
    return scale * jnp.tanh(x)


@scaled_tanh.defjvp
def scaled_tanh_jvp(primals, tangents):
    """The tangent in x only: `scale` is treated as a constant."""
    (x, scale), (tx, _) = primals, tangents
    return scaled_tanh(x, scale), scale * (1 - jnp.tanh(x) ** 2) * tx


@jax.custom_jvp
def scaled_tanh_silent(x, scale):
    return scale * jnp.tanh(x)


@scaled_tanh_silent.defjvp
def scaled_tanh_silent_jvp(primals, tangents):
    (x, scale), (tx, _) = primals, tangents
    return scaled_tanh_silent(x, scale), scale * (1 - jnp.tanh(x) ** 2) * tx
