"""A transform written for complex data, the pattern of a distributed FFT's custom_vjp: `unitary_dft`'s body names
no complex dtype, and its package converts every signal to complex before calling it (`spectrum`, through an
optional backend: the default path never reaches it). Drawn real, it still runs, and its backward pass returns a
complex cotangent for the real input (JXG004) on data the package never passes. `unitary_dft_any` is the same
transform whose package also hands it real signals (`spectrum_any`): the complex cotangent is reported there.
`unitary_dft_annotated` states its contract in a jaxtyping annotation (`Complex[Array, "n"]`) instead."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def unitary_dft(x):
    return jnp.fft.fft(x, norm="ortho")


def _dft_fwd(x):
    return unitary_dft(x), None


def _dft_bwd(_, g):
    return (jnp.fft.fft(g, norm="ortho"),)  # the unitary DFT matrix is symmetric: its transpose is itself


unitary_dft.defvjp(_dft_fwd, _dft_bwd)


def spectrum(signal, backend: str = "jnp"):
    """The unitary spectrum of a real or complex signal."""
    signal = jnp.asarray(signal).astype(jnp.complex64)
    if backend == "custom":
        return unitary_dft(signal)
    return jnp.fft.fft(signal, norm="ortho")


@jax.custom_vjp
def unitary_dft_any(x):
    return jnp.fft.fft(x, norm="ortho")


def _dft_any_fwd(x):
    return unitary_dft_any(x), None


def _dft_any_bwd(_, g):  # jaxdiag-expect: JXG004
    return (jnp.fft.fft(g, norm="ortho"),)


unitary_dft_any.defvjp(_dft_any_fwd, _dft_any_bwd)


def spectrum_any(signal, backend: str = "jnp"):
    """The unitary spectrum of a signal, as given."""
    if backend == "custom":
        return unitary_dft_any(signal)
    return jnp.fft.fft(signal, norm="ortho")


@jax.custom_vjp
def unitary_dft_annotated(x: "Complex[Array, 'n']"):  # noqa: F821 - jaxtyping's notation, read, never imported
    """The transform with its contract in its annotation instead: drawn complex, as its package's calls would."""
    return jnp.fft.fft(x, norm="ortho")


def _dft_annotated_fwd(x):
    return unitary_dft_annotated(x), None


def _dft_annotated_bwd(_, g):
    return (jnp.fft.fft(g, norm="ortho"),)


unitary_dft_annotated.defvjp(_dft_annotated_fwd, _dft_annotated_bwd)
