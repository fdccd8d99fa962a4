"""Every check, in the order they run. Each module exposes `CHECKS`; a check yields `Finding`s built from the
rule catalog (`jaxdiag._rules`) and never touches JAX internals except through `jaxdiag._compat`."""

from __future__ import annotations

from . import (_batching, _custom_jvp, _custom_vjp, _custom_vmap, _ffi, _grad, _platforms, _portability,
               _primitive_ad, _registration, _solves)
from ._base import Check

ALL_CHECKS: list[Check] = [
    *_registration.CHECKS,
    *_platforms.CHECKS,
    *_portability.CHECKS,
    *_batching.CHECKS,
    *_custom_vmap.CHECKS,
    *_ffi.CHECKS,
    *_custom_vjp.CHECKS,
    *_custom_jvp.CHECKS,
    *_primitive_ad.CHECKS,
    *_solves.CHECKS,  # before _grad: its findings block the compositions built on the same solves
    *_grad.CHECKS,
]
