"""A primitive whose operand contract is stated only by the wrapper that binds it: `masked_pick` asserts that its
`keep` flag is a boolean scalar, and the primitive's impl and abstract eval never read it (the JVP and transpose
rules go through the same wrapper, so a float or non-scalar `keep` fails its assertion there). `checked_pick` is the
same primitive's contract stated as `if ...: raise` guards instead of asserts."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir


def masked_pick(keep, new, old):
    """`new` where `keep`, else `old`."""
    keep = jnp.asarray(keep)
    assert keep.shape == ()
    assert keep.dtype == jnp.bool_
    return masked_pick_p.bind(keep, new, old)


def _pick_impl(keep, new, old):
    return jnp.where(keep, new, old)


def _pick_abstract(keep, new, old):
    return new


def _pick_jvp(primals, tangents):
    keep, new, old = primals
    _, t_new, t_old = tangents
    t_new, t_old = ad.instantiate_zeros(t_new), ad.instantiate_zeros(t_old)
    return masked_pick(keep, new, old), masked_pick(keep, t_new, t_old)


def _pick_transpose(ct, keep, new, old):
    if type(ct) is ad.Zero:
        return None, None, None
    zero = jnp.zeros_like(ct)
    return (None, masked_pick(keep, ct, zero) if ad.is_undefined_primal(new) else None,
            masked_pick(keep, zero, ct) if ad.is_undefined_primal(old) else None)


def _pick_batch(args, dims):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
    keep, new, old = (jnp.moveaxis(a, d, 0) if d is not None else jnp.broadcast_to(a, (size, *a.shape))
                      for a, d in zip(args, dims))
    return jax.vmap(_pick_impl)(keep, new, old), 0


masked_pick_p = Primitive("masked_pick")
masked_pick_p.def_impl(_pick_impl)
masked_pick_p.def_abstract_eval(_pick_abstract)
ad.primitive_jvps[masked_pick_p] = _pick_jvp
ad.primitive_transposes[masked_pick_p] = _pick_transpose
batching.primitive_batchers[masked_pick_p] = _pick_batch
mlir.register_lowering(masked_pick_p, mlir.lower_fun(_pick_impl, multiple_results=False))


def checked_pick(flag, new, old):
    """The same primitive, bound by a wrapper that raises instead of asserting."""
    flag = jnp.asarray(flag)
    if flag.ndim != 0 or not jnp.issubdtype(flag.dtype, jnp.bool_):
        raise TypeError(f"flag must be a boolean scalar, got {flag.dtype}{flag.shape}")
    return masked_pick_p.bind(flag, new, old)
