"""A kernel whose CPU backend needs a compiler module that is not installed: running it raises the library's own
error wrapping the ImportError, while its abstract eval and rules trace fine. It cannot run here; its rules can
still be checked abstractly."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad, mlir


class KernelBuildError(RuntimeError):
    pass


def _impl(x):
    try:
        import jaxdiag_absent_kernel_compiler  # noqa: F401
    except ModuleNotFoundError as exc:
        raise KernelBuildError(f"backend 'jit-compiler' failed to build the kernel: {exc!r}") from exc
    return x * 2.0


scale2_p = Primitive("inputs_callsite_scale2")
scale2_p.def_impl(_impl)
scale2_p.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
mlir.register_lowering(scale2_p, mlir.lower_fun(_impl, multiple_results=False))
ad.defjvp(scale2_p, lambda t, x: 2.0 * t)


def scale2(x):
    return scale2_p.bind(jnp.asarray(x))
