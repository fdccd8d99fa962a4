"""A primitive whose impl takes `*ins`, held by a kernel object the library calls (`mv_kernel(weights, spikes,
...)`), and documented only by the function making that call: "spikes : The binary vector with shape (k,)". Its
operands are named at that call; the documentation of `spikes` is then its contract (0s and 1s), as for a primitive
whose impl names its parameters."""

from jax.core import ShapedArray
from jax.extend import core


def _impl(*ins, transpose):
    weights, spikes = ins
    active = (spikes != 0).astype(weights.dtype)
    return active @ weights if transpose else weights @ active


def _abstract(*ins, transpose):
    weights, _ = ins
    return ShapedArray((weights.shape[1 if transpose else 0],), weights.dtype)


class Kernel:
    def __init__(self, name):
        self.primitive = core.Primitive(name)
        self.primitive.def_impl(_impl)
        self.primitive.def_abstract_eval(_abstract)

    def __call__(self, *ins, **params):
        return self.primitive.bind(*ins, **params)


mv_kernel = Kernel("binary_mv")


def binary_mv(weights, spikes, *, transpose=False):
    """Event-driven matrix-vector product.

    Parameters
    ----------
    weights : jax.Array
        The weight matrix, shape ``(m, k)``.
    spikes : jax.Array
        The binary vector with shape ``(k,)``. Can be boolean or float.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> binary_mv(jnp.ones((3, 4), dtype=jnp.float32), jnp.array([1., 0., 1., 0.], dtype=jnp.float32))
    """
    return mv_kernel(weights, spikes, transpose=transpose)
