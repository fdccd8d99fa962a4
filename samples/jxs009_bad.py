"""JXS009 bad: a two-operand primitive (`x * w`, linear in each, with JVP and transpose rules) whose abstract eval
builds a fresh `ShapedArray`. Inside `shard_map` its output is then typed as identical on every device. With `x`
sharded and the weight `w` replicated, nothing raises: the forward is exact, but the gradient with respect to `w`
is each device's own part, never summed over the devices.

Plain JAX on 8 CPU devices, on JAX that types values by the mesh axes they vary over (`vma`)::

    mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 4), ("a", "b"))
    x, w = np.random.randn(8, 4).astype(np.float32), np.random.randn(4).astype(np.float32)

    def loss(x, w):  # inside shard_map: a sharded batch, a replicated weight, a psum-reduced loss
        return jax.lax.psum(jnp.sum(jnp.sin(scale(x, jnp.broadcast_to(w, x.shape)))), ("a", "b"))

    sharded = jax.shard_map(loss, mesh=mesh, in_specs=(P(("a", "b")), P()), out_specs=P())
    jax.grad(sharded, argnums=1)(x, w)                               # wrong, silently
    jax.grad(lambda x, w: jnp.sum(jnp.sin(x * w)), argnums=1)(x, w)  # the right gradient

(jax 0.5 has no such types: there shard_map refuses the primitive, `No replication rule for scale`.)
"""

import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive
from jax.core import ShapedArray

JAXDIAG = {"scale_p": {"args": ["f32[4]", "f32[4]"]}}

scale_p = Primitive("scale")  # jaxdiag-expect: JXS004 (jax 0.5: no replication rules)


def scale(x, w):
    return scale_p.bind(x, w)


def _scale_abstract_eval(x, w):  # jaxdiag-expect: JXS004, JXS009 (newer JAX: varying axes dropped)
    return ShapedArray(x.shape, x.dtype)


def _scale_jvp(primals, tangents):
    x, w = primals
    tx, tw = (ad.instantiate_zeros(t) for t in tangents)
    return scale(x, w), scale(tx, w) + scale(x, tw)


def _scale_transpose(ct, x, w):
    if ad.is_undefined_primal(x):
        return scale(ct, w), None
    return None, scale(x, ct)


def _scale_batch(args, dims):
    """Both operands batched along axis 0 (an unbatched one broadcast): the primitive takes equal shapes."""
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    x, w = (jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size, *a.shape))
            for a, d in zip(args, dims))
    return scale(x, w), 0


scale_p.def_impl(lambda x, w: x * w)
scale_p.def_abstract_eval(_scale_abstract_eval)
mlir.register_lowering(scale_p, mlir.lower_fun(lambda x, w: x * w, multiple_results=False))
ad.primitive_jvps[scale_p] = _scale_jvp
ad.primitive_transposes[scale_p] = _scale_transpose
batching.primitive_batchers[scale_p] = _scale_batch
