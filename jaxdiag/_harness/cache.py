"""The typed per-subject cache: what one check computes and the others of the same subject reuse.

One `SubjectCache` per subject, shared by every check of it (through `Context.cache`): the seeded example, the
traced jaxpr, the example's output, the batching evidence, the grad state. Typed fields, so a misspelt key is an
attribute error at the first run instead of a silently recomputed (or silently missing) value.

The types of what the checks store here live with the checks (a layer above): they are imported for the type
checker only, so this module never imports a check at run time (tests/test_architecture.py skips `TYPE_CHECKING`
blocks when it looks for upward imports, and holds these fields to real types, never `Any`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .boundary import UserResult

if TYPE_CHECKING:
    import numpy as np

    from .._checks._base import SkipCheck, Subject
    from .._checks._batching._evidence import Evidence
    from .._checks._gradref._state import GradState
    from .._checks._shared import AbstractOutput, ExampleOutput
    from .._checks._sharding import Run
    from .._checks._sharding_rules import Mixing
    from .tracing import Trace


@dataclass
class ShardingMemo:
    """What the sharding checks of one subject share (`_checks._sharding`, `_sharding_rules`; `_mesh`)."""

    reference: list[np.ndarray] | BaseException | None = None  # the subject on one device, or what it raised
    runs: dict[bool, list[Run]] = field(default_factory=dict)  # shardy? -> jit compiled and run per placement
    mixed_factors: dict[str, Mixing] | None = None  # factors the sharding_rule passes through although mixed
    partitioned_calls: int = 0  # custom_partitioning calls found in the function (checked at each call)


@dataclass
class SubjectCache:
    example: list[np.ndarray] | None = None  # one example's arguments (Context.example)
    observed: bool = False  # `example` holds the values the user's own function passes this nested rule
    trace: UserResult[Trace] | None = None  # the function traced once (tracing.trace_function)
    nested_subjects: list[Subject] = field(default_factory=list)  # user primitives / custom_* calls inside it
    example_output: ExampleOutput | None = None
    abstract_output: AbstractOutput | None = None
    index_bounds: dict[int, int] | None = None  # _index_range: spec position -> the largest dim it indexes
    # _index_range: example -> {spec position: the out-of-range value drawn there}; `index_probes_off` re-runs
    # the batching checks without them
    index_probes: dict[int, dict[int, int]] = field(default_factory=dict)
    index_probes_off: bool = False
    grown_shapes: list[tuple[int, ...]] | None = None  # impl output shapes for inputs one larger in every dim
    grown_shapes_done: bool = False
    batching_evidence: Evidence | SkipCheck | None = None  # or the SkipCheck that stopped collecting it
    platform_blocker: str | None = None  # _abstract: why it cannot run here ("" when it can)
    jit_broken: bool = False  # jax.jit of the primitive fails or differs from its impl (JXR010)
    grad: GradState | None = None
    sharding: ShardingMemo = field(default_factory=ShardingMemo)  # the sharding child's runs and reference

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
