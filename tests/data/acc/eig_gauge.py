"""Custom derivatives of the eigendecomposition of a general matrix, with the textbook formula (`diag(V^-1 dV) = 0`).
`jnp.linalg.eig` normalises each eigenvector and picks its phase; the formula keeps another gauge, so against finite
differences of eig the eigenvector derivative differs along each eigenvector, and only there: every loss that does
not depend on the arbitrary norm and phase gets the same gradient. `eig` is a custom_vjp, `eig_jvp` a custom_jvp;
their `_flipped` twins have the coupling term's sign flipped, which no gauge explains."""

import jax
import jax.numpy as jnp


def _decompose(x):
    w, v = jnp.linalg.eig(x)
    return w, v


def _gradient(res, g, sign):
    w, v, x = res
    gw, gv = g
    vh = v.T.conj()
    gap = w[None, :] - w[:, None]
    off = ~jnp.eye(w.shape[0], dtype=bool)
    coupling = jnp.where(off, sign / jnp.conj(jnp.where(off, gap, 1.0)), 0.0)
    grad = jnp.linalg.inv(vh) @ (jnp.diag(gw).conj() + coupling * (vh @ gv.conj())) @ vh
    grad = grad.conj()
    return (grad.real if not jnp.iscomplexobj(x) else grad,)


@jax.custom_vjp
def eig(x):
    return _decompose(x)


def _eig_fwd(x):
    w, v = _decompose(x)
    return (w, v), (w, v, x)


def _eig_bwd(res, g):
    return _gradient(res, g, 1.0)


eig.defvjp(_eig_fwd, _eig_bwd)


@jax.custom_vjp
def eig_flipped(x):
    return _decompose(x)


def _flipped_fwd(x):
    w, v = _decompose(x)
    return (w, v), (w, v, x)


def _flipped_bwd(res, g):
    return _gradient(res, g, -1.0)


eig_flipped.defvjp(_flipped_fwd, _flipped_bwd)


def _tangents(x, dx, sign):
    w, v = _decompose(x)
    inner = jnp.linalg.solve(v, dx.astype(v.dtype) @ v)  # V^-1 dA V
    gap = w[None, :] - w[:, None]
    off = ~jnp.eye(w.shape[0], dtype=bool)
    coupling = jnp.where(off, sign / jnp.where(off, gap, 1.0), 0.0)
    return (w, v), (jnp.diagonal(inner), v @ (coupling * inner))


@jax.custom_jvp
def eig_jvp(x):
    return _decompose(x)


@eig_jvp.defjvp
def _eig_jvp_rule(primals, tangents):
    return _tangents(primals[0], tangents[0], 1.0)


@jax.custom_jvp
def eig_jvp_flipped(x):
    return _decompose(x)


@eig_jvp_flipped.defjvp
def _eig_jvp_flipped_rule(primals, tangents):
    return _tangents(primals[0], tangents[0], -1.0)
