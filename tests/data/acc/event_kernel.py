"""An event-driven kernel, as spiking-network libraries write them: `event_matvec_p` multiplies weights by the events
of a spike vector (`spikes > 0`), so its impl does not move at all with the spikes' values. Its JVP gives the spikes
the straight-through tangent `weights @ t` (a surrogate gradient, the point of such a kernel), and the weights their
true one. Declared inputs: float spikes away from 0, so no step crosses the threshold."""

import jax
import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

JAXDIAG = {"event_matvec_p": {"args": ["f32[3,4]", "f32[4]@positive"]}}

event_matvec_p = Primitive("event_matvec")


def _events(weights, spikes):
    return weights @ (spikes > 0).astype(weights.dtype)


def _event_matvec_jvp(primals, tangents):  # jaxdiag-expect: JXG033
    (weights, spikes), (t_weights, t_spikes) = primals, tangents
    out = event_matvec_p.bind(weights, spikes)
    t_weights = jnp.zeros_like(weights) if type(t_weights) is ad.Zero else t_weights
    t_spikes = jnp.zeros_like(spikes) if type(t_spikes) is ad.Zero else t_spikes
    return out, _events(t_weights, spikes) + weights @ t_spikes


event_matvec_p.def_impl(_events)
event_matvec_p.def_abstract_eval(lambda weights, spikes: jax.core.ShapedArray(weights.shape[:1], weights.dtype))
mlir.register_lowering(event_matvec_p, mlir.lower_fun(_events, multiple_results=False))
ad.primitive_jvps[event_matvec_p] = _event_matvec_jvp


def _event_matvec_batch(args, dims):  # one kernel call per example: the surrogate tangent stays the primitive's
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    front = [jnp.broadcast_to(a, (size,) + a.shape) if d is None else jnp.moveaxis(a, d, 0) for a, d in zip(args, dims)]
    return jax.lax.map(lambda pair: event_matvec_p.bind(*pair), tuple(front)), 0


batching.primitive_batchers[event_matvec_p] = _event_matvec_batch
