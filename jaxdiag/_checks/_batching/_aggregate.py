"""What one value a batching rule returned unbatched (dim None) is of the batch: an aggregate (a maximum, a sum, a
logical OR, the whole batch kept as an axis) or not, told from the rule's concrete returns and, where a scalar
aggregate could also be one example's own result, from the rule run again with the examples permuted."""

from __future__ import annotations

import dataclasses

import numpy as np

from ... import _compat
from ..._harness import call_user
from ..._loading import _numerics
from ._evidence import Evidence
from ._fused import _returned_outputs
from ._spy import RuleCall


def unbatched_outputs(calls: list[RuleCall]) -> dict[int, list[RuleCall]]:
    """Output index -> the calls that returned it unbatched (dim None) at a variant's outer level, on concrete
    values and a real batch (size > 1): where a batch-wide value can be told from per-example ones."""
    flagged: dict[int, list[RuleCall]] = {}
    for call in calls:
        if call.top and call.variant.concrete and call.out_dims and call.variant.size > 1:
            for k, d in enumerate(call.out_dims):
                if d is None:
                    flagged.setdefault(k, []).append(call)
    return flagged


def batch_aggregate(calls: list[RuleCall], k: int, ev: Evidence) -> str | None:
    """The aggregate of the batch (`_numerics.batch_aggregate`) that output k's one value is in the calls flagged
    for it: one name that no call contradicts; a call matching none is skipped (its draws can tie an aggregate to
    one example, e.g. a scalar maximum that is example 0's own)."""
    names = set()
    for call in calls:
        returned = _returned_output(call, k)
        per = ev.reference.outputs(call.variant.pattern, call.variant.size)
        if returned is None or isinstance(per, BaseException):
            continue
        stacked = np.stack([np.asarray(p[k]) for p in per])
        name = _numerics.batch_aggregate(returned, stacked)
        if name is not None and _numerics.compare(returned, stacked[0]).ok and not _permutation_invariant(call, k):
            return None  # example 0's own result for every example, which happened to be the batch's maximum
        if name is not None:
            names.add(name)
    return names.pop() if len(names) == 1 else None


def _permutation_invariant(call: RuleCall, k: int) -> bool:
    """Whether the rule returns the same output k with the examples rolled by one along each operand's batch dim:
    an aggregate of the batch does, one example's result does not."""
    if call.rerun is None or call.operands is None:
        return False
    rolled = tuple(v if d is None else np.roll(np.asarray(v), 1, axis=d) for v, d in zip(call.operands, call.in_dims))
    rerun = call.rerun
    again = call_user(lambda: rerun(rolled))
    if again.error is not None:
        return False
    before, after = _returned_output(call, k), _returned_output(dataclasses.replace(call, result=again.value), k)
    return before is not None and after is not None and _numerics.compare(after, before).ok


def _returned_output(call: RuleCall, k: int) -> np.ndarray | None:
    """The concrete value the rule returned for output k at the variant's outer level (None: traced, malformed)."""
    outs = _returned_outputs(call)
    if outs is None or k >= len(outs) or _compat.is_tracer(outs[k]):
        return None
    return np.asarray(outs[k])
