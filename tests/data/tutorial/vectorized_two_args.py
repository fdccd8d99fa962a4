"""Tutorial-style: `batching.defvectorized` on a two-argument primitive; JAX's vectorized batcher asserts that
both arguments are batched along the same dim, so vmap with one argument unbatched fails."""

from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"scaled_add_p": {"args": ["f32[3]", "f32[3]"]}}

scaled_add_p = Primitive("scaled_add")


def _scaled_add_impl(x, y):
    return x + 2.0 * y


def _scaled_add_abstract_eval(x, y):
    return ShapedArray(x.shape, x.dtype)


scaled_add_p.def_impl(_scaled_add_impl)
scaled_add_p.def_abstract_eval(_scaled_add_abstract_eval)
batching.defvectorized(scaled_add_p)  # jaxdiag-expect: JXB006
mlir.register_lowering(scaled_add_p, mlir.lower_fun(_scaled_add_impl, multiple_results=False))
