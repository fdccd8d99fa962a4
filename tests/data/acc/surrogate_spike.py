"""A spiking neuron's surrogate-gradient primitive as spiking-network libraries write it: `spike_p.bind(x, dx)` with
the surrogate slope `dx` computed from `stop_gradient(x)` at its only call site, so JAX never gives `dx` a tangent.
Its JVP adds `tdx` to a tangent of `x`'s shape and its batching rule leaves an unbatched `dx` as it is: both fine
for every program the package makes. `leaky_spike_p` is bound with a slope computed from `x` itself (no
`stop_gradient`): there `jax.vjp` of a vmap batching `x` alone does differentiate `dx`, and fails (JXB018)."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


def _impl(x, dx):
    return [jnp.asarray(x >= 0, dtype=x.dtype)]


def _batch(prim, args, axes):
    x, dx = args
    x_axis, dx_axis = axes
    out_axis = x_axis if x_axis is not None else dx_axis
    if x_axis is None:
        x = jnp.broadcast_to(jnp.expand_dims(x, dx_axis), dx.shape)
    return prim.bind(x, dx), (out_axis,)


def _jvp(prim, primals, tangents):
    x, dx = primals
    tx, tdx = tangents
    tangent_x = tx if type(tx) is ad.Zero else dx * tx
    return _impl(x, dx), [ad.add_tangents(tangent_x, tdx)]


def _register(name):
    prim = Primitive(name)
    prim.multiple_results = True
    prim.def_impl(_impl)
    prim.def_abstract_eval(lambda x, dx: [x])
    batching.primitive_batchers[prim] = lambda args, axes: _batch(prim, args, axes)
    ad.primitive_jvps[prim] = lambda primals, tangents: _jvp(prim, primals, tangents)
    mlir.register_lowering(prim, mlir.lower_fun(_impl, multiple_results=True))
    return prim


spike_p = _register("surrogate_spike")
leaky_spike_p = _register("surrogate_leaky_spike")


class Spike:
    def slope(self, x):
        return 1.0 / (1.0 + jnp.abs(x)) ** 2

    def __call__(self, x):
        dx = self.slope(jax.lax.stop_gradient(x))
        return spike_p.bind(x, dx)[0]


class LeakySpike(Spike):
    def __call__(self, x):
        dx = self.slope(x)
        return leaky_spike_p.bind(x, dx)[0]  # JXB018
