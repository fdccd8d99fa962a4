"""A semicircle window, sqrt(1 - x^2) inside (-1, 1) and 0 outside, as a primitive with a JVP rule that keeps
the square root's argument positive. `semicircle_p`'s batching rule evaluates the impl under vmap instead of binding
the primitive: vmap alone is right, but `jax.grad` of a batched call then differentiates the impl's own
`jnp.where(inside, jnp.sqrt(1 - x * x), 0)`, whose unselected branch is NaN outside the window, and zero times NaN
is NaN. Per example, and under `jax.vmap(jax.grad(f))`, the JVP rule runs and every gradient is finite.
`window_p` is the same primitive whose batching rule binds it, so its JVP rule applies batched too."""

import jax
import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

# the window and both sides of it: its callers evaluate it on a grid wider than the window
JAXDIAG = {name: {"args": ["f32[4]@-2..2"]} for name in ("semicircle_p", "window_p")}


def _semicircle(x):
    inside = jnp.abs(x) < 1
    return jnp.where(inside, jnp.sqrt(1 - x * x), 0.0)


def _define(name, batch):
    prim = Primitive(name)
    prim.def_impl(_semicircle)
    prim.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(prim, mlir.lower_fun(_semicircle, multiple_results=False))

    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        inside = jnp.abs(x) < 1
        safe = jnp.where(inside, 1 - x * x, 1.0)
        return prim.bind(x), jnp.where(inside, -x / jnp.sqrt(safe), 0.0) * t

    ad.primitive_jvps[prim] = jvp
    batching.primitive_batchers[prim] = lambda args, dims: batch(prim, args[0], dims[0])
    return prim


def _impl_under_vmap(prim, x, d):
    return jax.vmap(_semicircle, in_axes=d)(x), 0


def _bind_batched(prim, x, d):
    return prim.bind(x), d  # elementwise: the batched operand is one more axis of the same operation


semicircle_p = _define("semicircle", _impl_under_vmap)
window_p = _define("window", _bind_batched)
