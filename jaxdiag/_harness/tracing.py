"""Tracing the function under test: one function below both the engine (finding nested subjects) and the checks
(foreign calls, jit paths, nested rules), traced once per subject and cached."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jax

from .. import _compat
from .boundary import UserResult, call_user, jaxdiag_code
from .cache import SubjectCache

if TYPE_CHECKING:
    from .._checks._base import Subject


@dataclass
class Trace:
    jaxpr: Any  # the ClosedJaxpr of the function at the subject's specs
    custom_calls: list[tuple[Any, tuple, dict]]  # (custom_* object, args, kwargs) called while tracing
    input_tracers: list[Any]  # the function's input tracers: nested calls on them inherit their domains
    # ids of the custom_* objects called outside every custom_jvp/custom_vjp's primal: the others are only ever
    # differentiated through that enclosing rule
    differentiable: set[int]


def trace_function(subject: Subject, cache: SubjectCache) -> UserResult[Trace]:
    """The function's jaxpr and the custom_* objects it calls, traced once and cached (or why it could not be)."""
    if cache.trace is None:
        seen: list = []
        shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in subject.specs]
        # disable_jit: a jit-wrapped function that already ran (the domain probe calls it) would be served from
        # jit's trace cache without running its Python, so its custom_vjp/custom_jvp calls would go unrecorded.
        inputs: list = []

        def traced_call(*xs: Any) -> Any:
            inputs[:] = xs  # kept so nested calls on these tracers inherit the function's per-argument domains
            return subject.call(*xs)

        differentiable: set[int] = set()
        with _compat.record_custom_calls(seen, jaxdiag_code, differentiable), jax.disable_jit():
            traced = call_user(jax.make_jaxpr(traced_call), *shapes)
        cache.trace = (UserResult(Trace(traced.value, seen, list(inputs), differentiable)) if traced.error is None
                       else UserResult(error=traced.error))
    return cache.trace
