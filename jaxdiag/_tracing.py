"""Tracing a function subject once per run, below both the engine and the checks (the engine imports the checks,
so a check must never import the engine)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax

from . import _compat

if TYPE_CHECKING:
    from ._checks._base import Subject


def trace_function(subject: Subject, cache: dict) -> tuple[Any, list]:
    """The function's jaxpr and the custom_* objects it calls, traced once and cached."""
    if "jaxpr" not in cache:
        seen: list = []
        shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in subject.specs]
        # disable_jit: a jit-wrapped function that already ran (the domain probe calls it) would be served from
        # jit's trace cache without running its Python, so its custom_vjp/custom_jvp calls would go unrecorded.
        inputs: list = []

        def traced(*xs: Any) -> Any:
            inputs[:] = xs  # the function's input tracers: nested calls on them inherit their domains
            return subject.call(*xs)

        with _compat.record_custom_calls(seen), jax.disable_jit():
            cache["jaxpr"] = jax.make_jaxpr(traced)(*shapes)
        cache["custom_calls"] = seen
        cache["input_tracers"] = list(inputs)
    return cache["jaxpr"], cache["custom_calls"]
