"""A GPU kernel's call primitive, as kernel-binding libraries define it: lowered for CUDA only (on this machine it
traces but cannot run, so only the abstract checks apply, JXN013), with a JVP rule that refuses differentiation on
purpose ("wrap your kernel in jax.custom_vjp"). The abstract checks grade the refusal as the concrete ones do
(JXG025), never as a rule that crashed (JXG017). `kernel_call_broken_p`'s JVP rule fails by accident (it indexes
past its tangents): still JXG017. `kernel_call_stale_p`'s JVP rule calls a JAX function this release no longer has
(`lax.tie_in`, removed long ago): JXR008, the API named, not a crash of the rule."""

from functools import partial

import jax
from jax._src import dispatch
from jax.extend.core import Primitive
from jax.interpreters import ad, mlir


def _kernel(name):
    prim = Primitive(name)
    prim.def_impl(partial(dispatch.apply_primitive, prim))  # as GPU kernels' impls are
    prim.def_abstract_eval(lambda x, y: jax.core.ShapedArray(x.shape, x.dtype))
    mlir.register_lowering(prim, lambda ctx, x, y: [x], platform="cuda")
    return prim


kernel_call_p = _kernel("gpu_kernel_call")
kernel_call_broken_p = _kernel("gpu_kernel_call_broken")
kernel_call_stale_p = _kernel("gpu_kernel_call_stale")


def _refuse(primals, tangents):
    raise NotImplementedError("kernel calls do not support automatic differentiation: wrap the kernel in "
                              "jax.custom_vjp")


def _broken(primals, tangents):
    return kernel_call_broken_p.bind(*primals), tangents[2]  # JXG017


def _stale(primals, tangents):
    x, y = primals
    return kernel_call_stale_p.bind(x, y), jax.lax.tie_in(x, tangents[0])  # JXR008


ad.primitive_jvps[kernel_call_p] = _refuse
ad.primitive_jvps[kernel_call_stale_p] = _stale
ad.primitive_jvps[kernel_call_broken_p] = _broken
