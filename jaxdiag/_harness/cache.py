"""The typed per-subject cache: what one check computes and the others of the same subject reuse.

One `SubjectCache` per subject, shared by every check of it (through `Context.cache`): the seeded example, the
traced jaxpr, the example's output, the batching evidence, the grad state. Typed fields, so a misspelt key is an
attribute error at the first run instead of a silently recomputed (or silently missing) value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .boundary import UserResult

if TYPE_CHECKING:
    import numpy as np

    from .._checks._base import Subject
    from .tracing import Trace


@dataclass
class SubjectCache:
    example: list[np.ndarray] | None = None  # one example's arguments (Context.example)
    observed: bool = False  # `example` holds the values the user's own function passes this nested rule
    trace: UserResult[Trace] | None = None  # the function traced once (tracing.trace_function)
    nested_subjects: list[Subject] = field(default_factory=list)  # user primitives / custom_* calls inside it
    example_output: Any = None  # _shared.ExampleOutput
    abstract_output: Any = None  # _shared.AbstractOutput
    index_bounds: dict[int, int] | None = None  # _index_range: spec position -> the largest dim it indexes
    # _index_range: example -> {spec position: the out-of-range value drawn there}; `index_probes_off` re-runs
    # the batching checks without them
    index_probes: dict[int, dict[int, int]] = field(default_factory=dict)
    index_probes_off: bool = False
    grown_shapes: list[tuple[int, ...]] | None = None  # impl output shapes for inputs one larger in every dim
    grown_shapes_done: bool = False
    batching_evidence: Any = None  # _batching.Evidence, or the SkipCheck that stopped collecting it
    platform_blocker: str | None = None  # _abstract: why it cannot run here ("" when it can)
    jit_broken: bool = False  # jax.jit of the primitive fails or differs from its impl (JXR010)
    grad: Any = None  # _gradref.GradState
    sharding: dict[str, Any] = field(default_factory=dict)  # the sharding child's runs and reference

    @property
    def jaxpr(self) -> Any:
        """The traced jaxpr, None when the function was not traced or could not be."""
        return self.trace.value.jaxpr if self.trace is not None and self.trace.value is not None else None

    @property
    def custom_calls(self) -> list[tuple[Any, tuple, dict]]:
        """(custom_* object, args, kwargs) for every custom_vjp/custom_jvp/custom_vmap call seen while tracing."""
        return self.trace.value.custom_calls if self.trace is not None and self.trace.value is not None else []

    @property
    def input_tracers(self) -> list[Any]:
        """The traced function's input tracers, in argument order (empty when it was not traced)."""
        return self.trace.value.input_tracers if self.trace is not None and self.trace.value is not None else []
