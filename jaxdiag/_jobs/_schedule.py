"""Which work item a free worker of `jaxdiag check` takes next (`Schedule`), from a cost estimate known before
anything runs (`estimate`: the item's seconds in a previous run, kept beside the result cache, else a figure by
its kind).

Two things decide the wall time of a run with workers: the makespan (the last worker to finish, so long items must
not come last) and locality (neighbours in discovery order, a module's targets and a bad sample with its good twin,
mostly compile the same programs: in one worker, one after the other, they find those programs in its memory;
handed out alternately, each target took 1.3-1.4x longer). So the items are cut, in discovery order and between
modules where possible, into chunks of about 1/`CHUNKS_PER_SLOT` of a worker's share; a free worker takes the
longest chunk left (longest-processing-time-first) and works through it in order; once no chunk is left, a free
worker takes the last item of the chunk with the most estimated seconds left, so the workers end together. Each
worker pulls its next item when it finishes one. The order items run in never changes the report: `_parallel`
puts the results back in discovery order.

Plain data only (no JAX, no jaxdiag state): the pool gives each item its index, group and cost.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# Seconds a target of each kind took in the serial run of this project's samples (mean per kind, jax 0.10.2,
# 2-core CPU): what an item is assumed to cost when no previous run timed it. Only their ratios matter.
STATIC_SECONDS: dict[str, float] = {
    "primitive": 1.0, "function": 2.6, "custom_jvp": 1.1, "custom_vjp": 1.0, "custom_vmap": 0.35,
    "traced-reach": 3.0,
}
DEFAULT_SECONDS = 1.5  # a kind not listed
# Chunks per worker: more balance the end of a run better, fewer keep more neighbours in one worker.
CHUNKS_PER_SLOT = 4


@dataclass
class Task:
    """One work item as the scheduler sees it: its index in discovery order, the group it shares its programs
    with (its module), its estimated seconds."""

    index: int
    group: str
    cost: float


def estimate(key: str, kind: str, known: Mapping[str, float]) -> float:
    """An item's estimated seconds: as long as it took last time (`known`, by task key), else by its kind."""
    seconds = known.get(key)
    if seconds is not None and seconds >= 0:
        return seconds
    return STATIC_SECONDS.get(kind, DEFAULT_SECONDS)


def chunks(tasks: Sequence[Task], slots: int) -> list[list[Task]]:
    """`tasks` (in discovery order) cut into consecutive chunks of at most a worker's share / CHUNKS_PER_SLOT
    estimated seconds. A cut falls between groups; a group larger than that is cut inside (its targets still run
    in order, only in two workers)."""
    total = sum(t.cost for t in tasks)
    cap = total / (max(slots, 1) * CHUNKS_PER_SLOT)
    out: list[list[Task]] = []
    current: list[Task] = []
    for run in _group_runs(tasks):
        if current and sum(t.cost for t in current) + sum(t.cost for t in run) > cap:
            out.append(current)
            current = []
        for task in run:
            if current and sum(t.cost for t in current) + task.cost > cap and current[-1].group == task.group:
                out.append(current)  # a group larger than the cap
                current = []
            current.append(task)
    if current:
        out.append(current)
    return out


def _group_runs(tasks: Sequence[Task]) -> list[list[Task]]:
    runs: list[list[Task]] = []
    for task in tasks:
        if runs and runs[-1][-1].group == task.group:
            runs[-1].append(task)
        else:
            runs.append([task])
    return runs


def _cost(chunk: Sequence[Task]) -> float:
    return sum(t.cost for t in chunk)


class Schedule:
    """The items left to check, as chunks (`chunks`) taken longest first; each worker slot works through the chunk
    it took, in discovery order. `take(slot)`: the next item for that slot's worker (a replacement worker keeps its
    slot, and so its chunk)."""

    def __init__(self, tasks: Sequence[Task], slots: int) -> None:
        # stable sort: chunks of equal cost in discovery order
        self.queue = sorted(chunks(tasks, slots), key=_cost, reverse=True)
        self.current: dict[int, list[Task]] = {}

    def __bool__(self) -> bool:
        return bool(self.queue) or any(self.current.values())

    def take(self, slot: int) -> int:
        own = self.current.get(slot)
        if own:
            return own.pop(0).index
        if self.queue:
            chunk = self.queue.pop(0)
            self.current[slot] = chunk
            return chunk.pop(0).index
        # nothing left to start: the end of the chunk with the most left, so that both finish about together
        longest = max((c for c in self.current.values() if c), key=_cost)
        return longest.pop().index
