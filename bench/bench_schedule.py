"""`jaxdiag check -j N`'s schedule judged by a makespan model, not by wall time (which a shared machine's load moves
more than any schedule does).

1. `--record OUT.json`: check `--samples` (default samples/) serially in this process, as `-j 1 --timeout 0` does,
   timing every work item in discovery order (label, kind, module, seconds); the traced-reach phase last.
2. `--model IN.json`: replay those seconds through the schedulers for N workers that pull their next item when
   free, and print each one's makespan (when the last worker is done), the lower bound max(sum / N, longest item),
   and how many neighbours in discovery order ran apart (in different workers, or not one right after the other):
   each such pair may compile the same programs twice. Schedulers: `before` (each worker a contiguous run of equal
   count, then the end of the longest run left: the code before `_jobs/_schedule.py`), `schedule` with costs by
   kind only (a run without the cache), with the recorded seconds (the previous run's, exactly), and with
   `--previous PREV.json` (another run's seconds: a realistic estimate).

    python bench/bench_schedule.py --record /tmp/serial.json [--samples DIR]
    python bench/bench_schedule.py --model /tmp/serial.json [--jobs 2] [--previous /tmp/other.json]
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def record(out: Path, samples: Path) -> None:
    from jaxdiag._jobs import _keys, _lint, _parallel

    rows: list[dict[str, Any]] = []
    real_run, real_phase = _parallel.run_in_process, _keys.TracedPhase.run

    def timed(lint: Any, found: Any) -> Any:
        start = time.perf_counter()
        outcome = real_run(lint, found)
        rows.append({"label": found.label, "kind": found.kind, "module": found.walked.label,
                     "seconds": time.perf_counter() - start})
        return outcome

    def timed_phase(self: Any, lint: Any, checked: Any = ()) -> Any:
        start = time.perf_counter()
        outcome = real_phase(self, lint, checked)
        rows.append({"label": _keys.TRACED_LABEL, "kind": "traced-reach", "module": _keys.TRACED_LABEL,
                     "seconds": time.perf_counter() - start})
        return outcome

    _parallel.run_in_process = timed  # type: ignore[assignment]
    _keys.TracedPhase.run = timed_phase  # type: ignore[method-assign]
    _lint.check_paths([str(samples)], jobs=1, bound_memory=True)
    out.write_text(json.dumps({"rows": rows}, indent=1))
    print(f"{len(rows)} items, {sum(r['seconds'] for r in rows):.1f} s in all -> {out}")


class Before:
    """The schedule before `_schedule`: contiguous runs of equal count, the traced phase first in the last run."""

    def __init__(self, n_items: int, slots: int, phase: int | None) -> None:
        todo = [i for i in range(n_items) if i != phase]
        n = max(1, min(slots, len(todo)))
        bounds = [round(k * len(todo) / n) for k in range(n + 1)]
        self.runs = [todo[bounds[k]:bounds[k + 1]] for k in range(n)]
        if phase is not None:
            self.runs[-1].insert(0, phase)

    def __bool__(self) -> bool:
        return any(self.runs)

    def take(self, slot: int) -> int:
        own = self.runs[slot % len(self.runs)]
        return own.pop(0) if own else max(self.runs, key=len).pop()


def simulate(queue: Any, seconds: list[float], slots: int) -> tuple[float, list[list[int]]]:
    order: list[list[int]] = [[] for _ in range(slots)]
    free = [(0.0, s) for s in range(slots)]
    heapq.heapify(free)
    while queue:
        now, slot = heapq.heappop(free)
        index = queue.take(slot)
        order[slot].append(index)
        heapq.heappush(free, (now + seconds[index], slot))
    return max(t for t, _ in free), order


def apart(order: list[list[int]], n_items: int) -> int:
    together = {frozenset(pair) for run in order for pair in zip(run, run[1:])}
    return sum(1 for i in range(n_items - 1) if frozenset((i, i + 1)) not in together)


def model(path: Path, slots: int, previous: Path | None) -> None:
    from jaxdiag._jobs import _schedule

    rows = json.loads(path.read_text())["rows"]
    seconds = [float(r["seconds"]) for r in rows]
    phase = next((i for i, r in enumerate(rows) if r["kind"] == "traced-reach"), None)
    bound = max(sum(seconds) / slots, max(seconds))
    print(f"{len(rows)} items, {sum(seconds):.1f} s in all, {slots} workers: lower bound {bound:.1f} s")
    estimates: dict[str, list[float]] = {
        "by kind": [_schedule.estimate("", r["kind"], {}) for r in rows], "recorded seconds": seconds}
    if previous is not None:
        known = {r["label"]: float(r["seconds"]) for r in json.loads(previous.read_text())["rows"]}
        estimates["previous run"] = [_schedule.estimate(r["label"], r["kind"], known) for r in rows]
    span, order = simulate(Before(len(rows), slots, phase), seconds, slots)
    print(f"  before (contiguous runs)       : makespan {span:6.1f} s ({span / bound:.3f}x the bound), "
          f"{apart(order, len(rows))} neighbours apart")
    for name, costs in estimates.items():
        tasks = [_schedule.Task(i, r["module"], c) for i, (r, c) in enumerate(zip(rows, costs))]
        span, order = simulate(_schedule.Schedule(tasks, slots), seconds, slots)
        print(f"  schedule, costs {name:15s}: makespan {span:6.1f} s ({span / bound:.3f}x the bound), "
              f"{apart(order, len(rows))} neighbours apart")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path)
    parser.add_argument("--model", type=Path)
    parser.add_argument("--previous", type=Path)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--samples", type=Path, default=ROOT / "samples")
    opts = parser.parse_args()
    if opts.record:
        record(opts.record, opts.samples)
    if opts.model:
        model(opts.model, opts.jobs, opts.previous)


if __name__ == "__main__":
    main()
