"""A fused kernel written as a forward and a backward primitive (the pattern of Triton/Pallas kernel libraries):
`scale_bwd_p` is bound only inside the custom_vjp's bwd, and takes a keyword bind param (`mode`) that no literal
in the source holds. No function calls it by name; the public `scaled` reaches it under `jax.grad`, through
`_scaled.defvjp(_scaled_fwd, _scaled_bwd)`."""

from functools import partial

import jax
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

scale_fwd_p = Primitive("scale_fwd")
scale_bwd_p = Primitive("scale_bwd")


def _fwd_impl(x, *, mode):
    return 3.0 * x if mode.factor == 3 else x


def _bwd_impl(g, *, mode):
    return 3.0 * g if mode.factor == 3 else g


class Mode:
    """A bind param that is an object built at run time: no literal holds it."""

    def __init__(self, factor: int) -> None:
        self.factor = factor

    def __hash__(self) -> int:
        return hash(self.factor)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mode) and other.factor == self.factor


for prim, impl in ((scale_fwd_p, _fwd_impl), (scale_bwd_p, _bwd_impl)):
    prim.def_impl(impl)
    prim.def_abstract_eval(lambda x, *, mode: jax.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(prim, mlir.lower_fun(impl, multiple_results=False))
    batching.defvectorized(prim)


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def _scaled(x, factor):
    return scale_fwd_p.bind(x, mode=Mode(factor))


def _scaled_fwd(x, factor):
    return scale_fwd_p.bind(x, mode=Mode(factor)), None


def _scaled_bwd(factor, _, g):
    return (scale_bwd_p.bind(g, mode=Mode(factor)),)


_scaled.defvjp(_scaled_fwd, _scaled_bwd)


def scaled(x):
    """Three times `x`, by the fused kernel."""
    return _scaled(x, 3)
