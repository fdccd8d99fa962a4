"""A pair of linear transforms sized by their bind params, as spherical-harmonic and NUFFT kernels are, lowered for
CUDA only (checked here by tracing). `synthesis_p` maps the packed coefficients of `bands` bands (bands*(bands+1)/2
of them) to a grid of 3*bands points; `analysis_p` is its transpose. Each abstract eval reads the params only: the
operand's shape is the caller's business, and only the transpose rule says what it is. `summed_p` (elementwise,
its output follows its operand) has a transpose that returns one number for an array: a bug, reported.
"""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.interpreters import ad, mlir

try:
    from jax.extend.core import Primitive
except ImportError:  # jax < 0.4.36
    from jax.core import Primitive

synthesis_p = Primitive("sized_synthesis")
analysis_p = Primitive("sized_analysis")
summed_p = Primitive("sized_summed")


def _packed(bands):
    return bands * (bands + 1) // 2


def _basis(bands):
    return jnp.cos(jnp.outer(jnp.arange(3 * bands), jnp.arange(_packed(bands))) / (3.0 * bands))


# eager calls compile the primitive for the default device, as a kernel's impl does
synthesis_p.def_impl(lambda c, *, bands: jax.jit(lambda a: synthesis_p.bind(a, bands=bands))(c))
analysis_p.def_impl(lambda f, *, bands: jax.jit(lambda a: analysis_p.bind(a, bands=bands))(f))
summed_p.def_impl(lambda x: jax.jit(summed_p.bind)(x))
synthesis_p.def_abstract_eval(lambda c, *, bands: ShapedArray((3 * bands,), c.dtype))
analysis_p.def_abstract_eval(lambda f, *, bands: ShapedArray((_packed(bands),), f.dtype))
summed_p.def_abstract_eval(lambda x: ShapedArray(x.shape, x.dtype))
mlir.register_lowering(synthesis_p, mlir.lower_fun(lambda c, *, bands: _basis(bands) @ c, multiple_results=False),
                       platform="cuda")
mlir.register_lowering(analysis_p, mlir.lower_fun(lambda f, *, bands: _basis(bands).T @ f, multiple_results=False),
                       platform="cuda")
mlir.register_lowering(summed_p, mlir.lower_fun(lambda x: 2.0 * x, multiple_results=False), platform="cuda")
ad.deflinear2(synthesis_p, lambda ct, c, *, bands: [analysis_p.bind(ct, bands=bands)])
ad.deflinear2(analysis_p, lambda ct, f, *, bands: [synthesis_p.bind(ct, bands=bands)])
ad.deflinear2(summed_p, lambda ct, x: [2.0 * jnp.sum(ct)])  # jaxdiag-expect: JXG017


def synthesis(coefficients, bands: int):
    return synthesis_p.bind(coefficients, bands=bands)


def analysis(grid, bands: int):
    return analysis_p.bind(grid, bands=bands)


def summed(x):
    return summed_p.bind(x)
