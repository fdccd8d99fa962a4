"""Static arguments without defaults whose values only the module's own code gives: a literal bound by
`functools.partial` (the public name), a literal at a call, and a function passed by a caller (no literal can stand
for it)."""

import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _sqrt_bounded(x, max_gradient):
    return jnp.sqrt(x)


@_sqrt_bounded.defjvp
def _sqrt_bounded_jvp(max_gradient, primals, tangents):
    (x,), (t,) = primals, tangents
    y = jnp.sqrt(x)
    return y, t * jnp.minimum(0.5 / y, max_gradient)


stable_sqrt = functools.partial(_sqrt_bounded, max_gradient=1000.0)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _power(x, n):
    return x ** n


@_power.defjvp
def _power_jvp(n, primals, tangents):
    (x,), (t,) = primals, tangents
    return x ** n, n * x ** (n - 1) * t


def cube(x):
    return _power(x, 3)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _apply(fn, x):
    return fn(x)


def _apply_fwd(fn, x):
    return fn(x), x


def _apply_bwd(fn, x, ct):
    return (jax.vjp(fn, x)[1](ct)[0],)


_apply.defvjp(_apply_fwd, _apply_bwd)
