"""The primitive held by `matvec_p` is bound only by `matvec`, which builds `outs` from its operands' shapes and
takes `transpose` as a keyword every caller in the package writes as a literal. `matvec` is run only to reach
the kernel: a matrix with a vector is tried before two same-shape matrices, which its loose check lets through."""

import jax
import jax.numpy as jnp

from ._kernel import OutKernel


def _matvec_kernel(w, x, *, transpose):
    return (w.T if transpose else w) @ x


matvec_p = OutKernel("inputs_callsite_matvec", _matvec_kernel)


def matvec(w, x, *, transpose):
    # checks only the contracted length (a 2-D `x` of that length would pass too): its callers pass vectors
    assert x.shape[0] == w.shape[0 if transpose else 1], (w.shape, x.shape)
    rows = w.shape[1] if transpose else w.shape[0]
    out = jax.ShapeDtypeStruct((rows,), w.dtype)
    return matvec_p(w, x, outs=[out], transpose=transpose)


class Dense:
    """The package's own caller: `transpose` is always a literal here."""

    def __init__(self, w):
        self.w = w

    def __matmul__(self, x):
        return matvec(self.w, x, transpose=False)

    def __rmatmul__(self, x):
        return matvec(self.w, x, transpose=True)


def total(w, x):
    return jnp.sum(Dense(w) @ x)
