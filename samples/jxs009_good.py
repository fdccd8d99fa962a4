"""JXS009 good: the abstract eval keeps the operands' varying mesh axes (`x.update(...)`), and, as JAX's own
primitives do, refuses operands that vary over different axes, so a caller casts a replicated weight to varying
(`jax.lax.pcast(w, axes, to="varying")`) before binding; the transpose of that cast sums the weight's cotangent
over the devices. On jax 0.5 the primitive registers shard_map's standard replication rules instead."""

import jax.numpy as jnp
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

try:  # jax <= 0.5: shard_map's check_rep needs replication rules per primitive
    from jax.experimental.shard_map import register_standard_check, register_standard_rewrite
except ImportError:  # newer JAX: the avals' varying mesh axes do that job
    register_standard_check = register_standard_rewrite = None

JAXDIAG = {"scale_p": {"args": ["f32[4]", "f32[4]"]}}

scale_p = Primitive("scale")


def scale(x, w):
    return scale_p.bind(x, w)


def _varying(aval):
    """The mesh axes a value varies over inside shard_map (none where this JAX does not track them)."""
    axes = getattr(getattr(aval, "manual_axis_type", None), "varying", None)
    return frozenset(axes if axes is not None else getattr(aval, "vma", ()))


def _scale_abstract_eval(x, w):
    if _varying(x) != _varying(w):
        raise TypeError(f"scale: operands vary over different mesh axes ({sorted(_varying(x))} and "
                        f"{sorted(_varying(w))}); cast the replicated one to varying before binding")
    return x.update(shape=x.shape, dtype=x.dtype)


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
if register_standard_check is not None:
    register_standard_check(scale_p)
    register_standard_rewrite(scale_p)
