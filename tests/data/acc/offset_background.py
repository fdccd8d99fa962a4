"""A field with a large affine background (the m*g*z of a tall column, a bias voltage): its gradient is the
background's slope plus a small curvature term. In float32 the gradient rounds to a grid far coarser than its change
over a finite-difference step, so differences of the gradient see nothing; in float64 they see the curvature.

`background_p` is right at every order. `background_held_p`'s JVP stops the gradient of its curvature term:
first derivatives are right, second derivatives lose -sin(x).
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.interpreters import ad, batching, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

SLOPE = 1.0e7  # the background's slope: float32 spaces gradients 1.0 apart near it

background_p = Primitive("offset_background")
background_held_p = Primitive("offset_background_held")


def _field(x):
    return SLOPE * x + jnp.sin(x)


def _background_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return background_p.bind(x), (SLOPE + jnp.cos(x)) * t


def _held_jvp(primals, tangents):  # jaxdiag-expect: JXG019
    (x,), (t,) = primals, tangents
    return background_held_p.bind(x), (SLOPE + lax.stop_gradient(jnp.cos(x))) * t


for _prim, _jvp in ((background_p, _background_jvp), (background_held_p, _held_jvp)):
    _prim.def_impl(_field)
    _prim.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(_prim, mlir.lower_fun(_field, multiple_results=False))
    ad.primitive_jvps[_prim] = _jvp
    batching.defvectorized(_prim)
