"""The five kinds of cold case the speed goals name: a custom_jvp (softplus), a custom_vjp with two outputs, an
xlogy-like function (a custom_jvp of JAX's own, `jax.scipy.special.xlogy`, on positive inputs), and two primitives
with batching rules (the seed's `my_sum` and a two-argument `matvec`). `bench_cold.py --cases five` runs them."""

import jax
import jax.numpy as jnp
import jax.scipy.special as sp


@jax.custom_jvp
def softplus(x):
    return jnp.logaddexp(x, 0.0)


@softplus.defjvp
def _softplus_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    return softplus(x), dx * jax.nn.sigmoid(x)


@jax.custom_vjp
def two_outputs(x, y):
    return x * y, jnp.sin(x)


def _two_fwd(x, y):
    return two_outputs(x, y), (x, y)


def _two_bwd(res, cts):
    x, y = res
    ct_prod, ct_sin = cts
    return ct_prod * y + ct_sin * jnp.cos(x), ct_prod * x


two_outputs.defvjp(_two_fwd, _two_bwd)

xlogy = sp.xlogy
