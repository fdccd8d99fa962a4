"""A Cholesky primitive whose JVP rule is right for the tangents its function gives it: the function builds a Gram
matrix `x @ x^H + n I`, so every tangent reaching `chol_p` is Hermitian. `chol_wrong_p` has the diagonal factor of
the same formula wrong (a real defect on Hermitian tangents too)."""

import jax
import jax.numpy as jnp
from jax.extend.core import Primitive
from jax.interpreters import ad


def _phi(m):
    """The lower triangle with its diagonal halved."""
    return jnp.tril(m) - 0.5 * jnp.diag(jnp.diag(m))


def _cholesky_tangent(a, t, half):
    low = jnp.linalg.cholesky(a)
    inv = jnp.linalg.inv(low)
    inner = inv @ t @ inv.conj().T
    phi = jnp.tril(inner) - half * jnp.diag(jnp.diag(inner))
    return low, low @ phi


def _make(name, half):
    prim = Primitive(name)
    prim.def_impl(lambda a: jnp.linalg.cholesky(a))
    prim.def_abstract_eval(lambda a: jax.core.ShapedArray(a.shape, a.dtype))

    def jvp(primals, tangents):
        (a,), (t,) = primals, tangents
        return _cholesky_tangent(a, t, half)

    ad.primitive_jvps[prim] = jvp
    return prim


chol_p = _make("verdicts_chol", 0.5)
chol_wrong_p = _make("verdicts_chol_wrong", 0.0)


def gram_cholesky(x):
    gram = x @ x.conj().T + x.shape[0] * jnp.eye(x.shape[0], dtype=x.dtype)
    return chol_p.bind(gram)


def gram_cholesky_wrong(x):
    gram = x @ x.conj().T + x.shape[0] * jnp.eye(x.shape[0], dtype=x.dtype)
    return chol_wrong_p.bind(gram)


# Zero-padded: the function pads its input with zeros, so the tangent is zero on the padding and the rule may skip it.
padded_norm_p = Primitive("verdicts_padded_norm")
padded_norm_p.def_impl(lambda a: jnp.sum(a * a + a))
padded_norm_p.def_abstract_eval(lambda a: jax.core.ShapedArray((), a.dtype))
ad.primitive_jvps[padded_norm_p] = lambda p, t: (padded_norm_p.bind(p[0]),
                                                 jnp.sum((2 * p[0][:3] + 1) * t[0][:3]))


def padded_norm(x):
    return padded_norm_p.bind(jnp.concatenate([x, jnp.zeros((5,), x.dtype)]))


# Tied: the function passes the same value twice, so both tangents are the same and the rule may use one of them.
square_tied_p = Primitive("verdicts_square_tied")
square_tied_p.def_impl(lambda a, b: a * b)
square_tied_p.def_abstract_eval(lambda a, b: jax.core.ShapedArray(a.shape, a.dtype))


def _square_tied_jvp(primals, tangents):
    (a, _), (ta, tb) = primals, tangents
    t = tb if type(ta) is ad.Zero else ta  # the same tangent on both sides
    return square_tied_p.bind(*primals), 2 * a * t


ad.primitive_jvps[square_tied_p] = _square_tied_jvp


def square_tied(x):
    y = jnp.sin(x)
    return square_tied_p.bind(y, y)
