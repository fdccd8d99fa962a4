"""An FFI-kernel-style primitive with no JVP rule, differentiated only through a custom_vjp: every `bind` of it
sits inside the custom_vjp's primal and fwd, so JAX never asks for its JVP rule and `jax.grad` works. The missing
JVP rule is at most a note (JXR006 info), also under `jaxdiag grad` on the primitive itself."""

import jax
import jax.numpy as jnp
from jax.core import ShapedArray
from jax.extend.core import Primitive
from jax.interpreters import batching, mlir

JAXDIAG = {"cube_kernel_p": {"args": ["f32[4]"]}, "cube": {"args": ["f32[4]"]}}

cube_kernel_p = Primitive("cube_kernel")


def _cube_impl(x):
    return x * x * x


def _cube_abstract_eval(x):
    return ShapedArray(x.shape, x.dtype)


cube_kernel_p.def_impl(_cube_impl)
cube_kernel_p.def_abstract_eval(_cube_abstract_eval)
mlir.register_lowering(cube_kernel_p, mlir.lower_fun(_cube_impl, multiple_results=False))
batching.defvectorized(cube_kernel_p)


def _call_kernel(x):
    return cube_kernel_p.bind(x)


@jax.custom_vjp
def cube(x):
    return _call_kernel(x)


def cube_fwd(x):
    return _call_kernel(x), x


def cube_bwd(x, g):
    return (3.0 * x * x * g,)


cube.defvjp(cube_fwd, cube_bwd)


def loss(x):
    return jnp.sum(cube(x))
