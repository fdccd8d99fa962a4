"""User primitives for tests/test_sharding.py's shard_map checks: other members of the class the JXS004/JXS009
samples show (`# expect: CODE` where the finding belongs), and primitives that work inside shard_map whatever
their abstract eval returns, which must stay clean."""

import jax.numpy as jnp
from jax.interpreters import ad, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive
from jax.core import ShapedArray


def _elementwise(name, fn, abstract_eval):
    prim = Primitive(name)
    prim.def_impl(fn)
    prim.def_abstract_eval(abstract_eval)
    mlir.register_lowering(prim, mlir.lower_fun(fn, multiple_results=False))
    return prim


# A fresh ShapedArray and no JVP: exact inside shard_map, nothing to differentiate: clean.
plain_p = _elementwise("plain_cube", lambda x: x * x * x, lambda x: ShapedArray(x.shape, x.dtype))


# Typed after the (replicated) weight: the output loses the batch's varying axes; linear rules via itself.
def _after_weight(x, w):  # expect: JXS009
    return w.update(shape=x.shape, dtype=x.dtype)


weighted_p = _elementwise("weighted", lambda x, w: x * w, _after_weight)


def _weighted_jvp(primals, tangents):
    x, w = primals
    tx, tw = (ad.instantiate_zeros(t) for t in tangents)
    return weighted_p.bind(x, w), weighted_p.bind(tx, w) + weighted_p.bind(x, tw)


def _weighted_transpose(ct, x, w):
    if ad.is_undefined_primal(x):
        return weighted_p.bind(ct, w), None
    return None, weighted_p.bind(x, ct)


ad.primitive_jvps[weighted_p] = _weighted_jvp
ad.primitive_transposes[weighted_p] = _weighted_transpose


# A fresh ShapedArray with a JVP written in lax ops (no transpose of its own): what grad does decides.
def _fresh(x, w):  # expect: JXS004
    return ShapedArray(x.shape, x.dtype)


mixed_p = _elementwise("mixed", lambda x, w: jnp.sin(x) * w, _fresh)
ad.defjvp(mixed_p, lambda tx, x, w: jnp.cos(x) * w * tx, lambda tw, x, w: jnp.sin(x) * tw)
