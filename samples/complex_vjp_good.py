"""Complex custom_vjp rules that follow JAX's convention (no false alarm): bwd receives the cotangent exactly as
JAX passes it and returns `jax.vjp(primal)(g)`, with no conjugation. Inputs are c64 under the default
configuration (x64 off): complex64 needs no x64."""

import jax
import jax.numpy as jnp

JAXDIAG = {
    "fftn_c": {"args": ["c64[4,4]"]},
    "scale_c": {"args": ["c64[3]"]},
    "loss": {"args": ["c64[3]"]},
}


@jax.custom_vjp
def fftn_c(z):
    return jnp.fft.fftn(z)


def fftn_c_fwd(z):
    return jnp.fft.fftn(z), z


def fftn_c_bwd(z, g):
    # the FFT is linear: its VJP is JAX's own VJP of fftn, at any point
    return jax.vjp(jnp.fft.fftn, z)[1](g)


fftn_c.defvjp(fftn_c_fwd, fftn_c_bwd)


@jax.custom_vjp
def scale_c(z):
    return (2 + 1j) * z


def scale_c_fwd(z):
    return (2 + 1j) * z, None


def scale_c_bwd(_, g):
    return ((2 + 1j) * g,)  # the transpose of z -> c z is g -> c g (no conj)


scale_c.defvjp(scale_c_fwd, scale_c_bwd)


def loss(z):
    return jnp.sum(jnp.abs(scale_c(z)) ** 2)
