"""The units of the traced-reach phase (`_traced_reach.check_by_tracing`): a public function traced on inferred
inputs, a factory called, a class built. Each is announced as it starts, so that a crash inside one (a callback's
host code that segfaults) is reported at that function and the phase runs again without it (`_keys.TracedPhase`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

# Told of each unit as it starts: a worker sends it to the pool (`_parallel`).
on_unit_start: Callable[[str], None] | None = None


def unit_starts(label: str, skip: Collection[str] = ()) -> bool:
    """Whether the unit `label` runs: not when an earlier run of the phase crashed in it (`skip`)."""
    if label in skip:
        return False
    if on_unit_start is not None:
        on_unit_start(label)
    return True
