"""Rules made in cached factories and reached only through public functions whose branch follows the input
(tests/test_disc.py): every factory names its rule `f`, as factories often do; `paired` returns early for an odd
size, so its first inferred inputs reach nothing; `even_only` refuses every odd or non-square input; `wide_only`
runs only with 64-bit mode on, as its users enable it. Each rule inside must be reached and checked."""

import functools

import jax
import jax.numpy as jnp


def _require_x64():
    if not jax.config.jax_enable_x64:
        raise RuntimeError('this module requires 64-bit mode: call jax.config.update("jax_enable_x64", True)')


@functools.lru_cache(maxsize=None)
def _square_fn(n):
    @jax.custom_jvp
    def f(a):
        return jnp.sum(a * a, axis=(-1, -2))

    @f.defjvp
    def f_jvp(primals, tangents):
        (a,), (da,) = primals, tangents
        return f(a), 2 * jnp.sum(a * da, axis=(-1, -2))

    return f


@functools.lru_cache(maxsize=None)
def _paired_fn(n):
    @jax.custom_jvp
    def f(a):
        return jnp.sum(jnp.sin(a), axis=(-1, -2))

    @f.defjvp
    def f_jvp(primals, tangents):
        (a,), (da,) = primals, tangents
        return f(a), jnp.sum(jnp.cos(a) * da, axis=(-1, -2))

    return f


@functools.lru_cache(maxsize=None)
def _even_fn(n):
    @jax.custom_jvp
    def f(a):
        return jnp.sum(jnp.exp(a), axis=(-1, -2))

    @f.defjvp
    def f_jvp(primals, tangents):
        (a,), (da,) = primals, tangents
        return f(a), jnp.sum(jnp.exp(a) * da, axis=(-1, -2))

    return f


@functools.lru_cache(maxsize=None)
def _wide_fn(n):
    @jax.custom_vjp
    def f(x):
        return jnp.tanh(x)

    def f_fwd(x):
        return f(x), x

    def f_bwd(x, g):
        return (g / jnp.cosh(x) ** 2,)

    f.defvjp(f_fwd, f_bwd)
    return f


def squared(a):
    """Sum of squares of a (batch of) matrices."""
    return _square_fn(a.shape[-1])(a)


def paired(a):
    """Zero for an odd size; else the sum of sines of a (batch of) matrices."""
    if a.ndim < 2:
        raise ValueError(f"expected (..., n, n), got {a.shape}")
    n = a.shape[-1]
    if n % 2 == 1:
        return jnp.zeros(a.shape[:-2], a.dtype)
    return _paired_fn(n)(a)


def even_only(a):
    """Defined for square matrices of even size only."""
    if a.ndim != 2 or a.shape[0] != a.shape[1] or a.shape[0] % 2:
        raise ValueError(f"expected an even square matrix, got {a.shape}")
    return _even_fn(a.shape[0])(a)


def wide_only(x):
    """tanh, in double precision."""
    _require_x64()
    return _wide_fn(x.shape[-1])(x)
