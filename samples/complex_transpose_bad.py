"""A complex linear primitive whose transpose conjugates the coefficient. JAX's transpose of `z -> c z` is
`ct -> c ct` (the bilinear transpose, not the Hermitian adjoint): with `conj(c)` every reverse-mode gradient
through the primitive is wrong, while jax.jvp is right."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

JAXDIAG = {"rotate_p": {"args": ["c64[3]"]}}

COEFF = 2 + 1j
rotate_p = Primitive("rotate_conj_bug")


def _rotate_impl(z):
    return COEFF * z


def _rotate_abstract_eval(z):
    return ShapedArray(z.shape, z.dtype)


def _rotate_transpose(ct, z):  # jaxdiag-expect: JXG002
    return [jnp.conj(COEFF) * ct]


rotate_p.def_impl(_rotate_impl)
rotate_p.def_abstract_eval(_rotate_abstract_eval)
mlir.register_lowering(rotate_p, mlir.lower_fun(_rotate_impl, multiple_results=False))
batching.defvectorized(rotate_p)
ad.deflinear2(rotate_p, _rotate_transpose)
