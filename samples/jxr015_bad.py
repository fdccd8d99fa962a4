"""JXR015 bad: the project runs on CPU and CUDA, but the lowering is registered for CPU only
(`platform="cpu"`). Every test passes on a laptop and in CI; on the first GPU `jax.jit` fails with
`NotImplementedError: MLIR translation rule for primitive 'softclip' not found for platform cuda`."""

import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"softclip_p": {"args": ["f32[4]"], "platforms": ["cpu", "cuda"]}}

softclip_p = Primitive("softclip")


def _softclip_impl(x):
    return jnp.tanh(x) * 3.0


def _softclip_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


softclip_p.def_impl(_softclip_impl)
softclip_p.def_abstract_eval(_softclip_abstract_eval)
batching.defvectorized(softclip_p)
mlir.register_lowering(softclip_p, mlir.lower_fun(_softclip_impl, multiple_results=False), platform="cpu")  # jaxdiag-expect: JXR015
