"""Run `jaxdiag check`'s targets: in this process, or in worker processes with a per-target time limit, and
through the result cache (`_cache.py`).

The lint layer discovers the targets; this module only decides where each one runs and puts the results back in
discovery order, so the report is the same whatever `--jobs` is. The recorded calls no target claimed (closure and
factory rules, `_reach.RecordedCall`) come after the targets as work items of their own, under the same time limit,
workers, memory bound and cache: a carrier running a loop op by op must not hold the run past the limit. A
target's outcome is everything `_Lint._check` produces for it: its reports (unfiltered: the lint layer filters the
whole report once, afterwards) and the lines whose suppressions cannot be judged because the target was not fully
checked. Outcomes are plain dicts: they cross the process boundary and are what the cache stores.

The workers (`_workers`: how one starts and what it runs; on a cold run they start before the parent's walk and
serve every batch of work, `run_workers`) run the targets they are sent one at a time, pulling the next when one is
done: the longest chunk of neighbouring targets
left first, each chunk in order in one worker (`_schedule`, its costs from the previous run's `TASK_SECONDS`
kept beside the result cache). A worker tells the parent which check it
starts, so a target that runs past `--timeout` is reported naming that check; the worker is then killed and
replaced. A worker clears JAX's caches as it grows (`MemoryBound`), and one that clearing leaves past
`WORKER_RETIRE_MB` (or that much above what its first clearing left: a package's lazy imports stay) is retired and
replaced, so memory stays bounded per worker.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias

from . import _cache, _keys, _schedule
from ._keys import TRACED_LABEL, TracedPhase
from ._outcome import Lint, Outcome, apply, crashed, internal, run_in_process, timed_out
from ._memory import MemoryBound, retire_limit, scratch_folder
from ._workers import Standby, Worker, WorkerSetup
from .._core._report import TargetReport

if TYPE_CHECKING:
    from . import _reach
    from ._discovery import Found

# One work item of the run: a discovered target, or a recorded call no target claimed (checked the same way).
Item: TypeAlias = "Found | _reach.RecordedCall"


def task_key(item: Item | TracedPhase) -> str:
    """What a worker finds the item by among the ones it rebuilt (`_workers.worker_main`)."""
    from . import _reach  # imports JAX: never at this module's import, which the CLI's parent side does

    return item.task_key if isinstance(item, (_reach.RecordedCall, TracedPhase)) else item.label


# Seconds a target may run under `jaxdiag check` unless `--timeout` or `timeout` in [tool.jaxdiag] says otherwise.
DEFAULT_TIMEOUT = 300.0
# A worker must have imported the user's modules within this many seconds (the parent already imported them once).
WORKER_START_SECONDS = 300.0


@dataclass
class RunSettings:
    """How `jaxdiag check` runs its targets. The defaults are the Python API's: in this process, no cache."""

    jobs: int = 1
    timeout: float | None = None  # seconds per target; None or 0: no limit
    cache: bool = False
    # `jaxdiag check` (never the Python API's caller): clear JAX's caches past WORKER_MEMORY_MB in this process too,
    # and share compiled programs through a compilation cache (`_run_compilation_cache`)
    bound_memory: bool = False
    scratch_xla: str | None = None  # the --no-cache run's temporary compilation cache, while the run lasts
    standby: Standby | None = None  # the run's workers between batches of work (`run_workers`)
    # the CLI (`_child.check`): every target in a worker, so that a crash or an exit in user code ends a worker
    # and becomes that target's result, never the run's end
    isolate: bool = False

    @property
    def in_process(self) -> bool:
        return self.jobs <= 1 and not self.timeout and not self.isolate


# Told of the run's progress (the supervised child forwards it to the parent's display): {"event": "discovered",
# "total": n}, {"event": "check", "target": subject, "check": name}, {"event": "done", "target": label,
# "findings": n}.
on_progress: Callable[[dict[str, Any]], None] | None = None


def _tell(**event: Any) -> None:
    if on_progress is not None:
        on_progress(event)


# What the last pooled run did (for the bench and for tests): worker processes started, the largest resident
# memory a worker reported after a target (MB), and how many times a worker cleared JAX's caches.
LAST_RUN: dict[str, float] = {}
# Each task's seconds in the worker that ran it, by task key (the scheduler's costs for the next run), and what
# the pool saw happen (for the bench): workers ready, tasks done.
TASK_SECONDS: dict[str, float] = {}
TIMELINE: list[dict[str, Any]] = []


def default_jobs() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


# ---------------------------------------------------------------------------------------------------------------
# Outcomes: a target's results as plain data
# ---------------------------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------------------------


def check_items(lint: Lint, founds: Sequence[Item], items: Sequence[ModuleType | str],
                settings: RunSettings, phase: TracedPhase | None = None) -> list[list[TargetReport]]:
    """The reports of each of `founds` (discovered targets, then the recorded calls none claimed), in their order:
    from the cache, this process or the workers. `phase`: the traced-reach phase, run by a worker when there are
    workers and the cache does not hold it (its `reports` are set then; see `TracedPhase`)."""
    cache = keys = None
    if settings.cache:
        cache, keys = _keys.cache_keys(lint, founds)
    outcomes: list[Outcome | None] = [None] * len(founds)
    if cache is not None and keys is not None:
        for i, key in enumerate(keys):
            hit = cache.get(key) if key is not None else None
            if hit is not None:
                outcomes[i] = Outcome.from_dict(hit)
    todo = [i for i, o in enumerate(outcomes) if o is None]
    if founds:  # (none: the traced-reach phase alone, after the targets' run, `_lint.run`)
        _tell(event="discovered", total=len(founds), cached=len(founds) - len(todo))
    with _run_compilation_cache(lint, settings) if todo else contextlib.nullcontext():
        return _check_todo(lint, founds, items, settings, outcomes, todo, cache, keys, phase)


def _check_todo(lint: Lint, founds: Sequence[Item], items: Sequence[ModuleType | str], settings: RunSettings,
                outcomes: list[Outcome | None], todo: list[int], cache: _cache.ResultCache | None,
                keys: list[str | None] | None, phase: TracedPhase | None = None) -> list[list[TargetReport]]:
    worker_items = _items_for_workers(items)
    phase_key = None
    pooled = False
    if (todo or phase is not None) and not settings.in_process and worker_items is not None:
        if phase is not None:
            phase_cache, phase_key = (_keys.traced_key(lint, phase.discovered, phase.checked) if settings.cache
                                      else (None, None))
            if phase_cache is not None and phase_key is not None and phase_cache.get(phase_key) is not None:
                phase = None  # `check_traced` reads it back
        standby = settings.standby or Standby()
        pool = _Pool(standby.setup or _setup_of(lint, worker_items, settings), settings, standby)
        known = cache.durations() if cache is not None else {}
        outcomes_iter: Iterator[tuple[int, Outcome]] = pool.run(lint, founds, todo, phase, known)
        pooled = True
    else:
        outcomes_iter = _in_process(lint, founds, todo, release=settings.bound_memory)
    fresh = [False] * len(founds)
    reports: list[list[TargetReport]] = []
    next_index = 0
    # Apply outcomes in discovery order as soon as the prefix is complete: the first usage error in that order
    # stops the run, as it does serially (and closing the iterator stops the workers).
    try:
        for i, outcome in outcomes_iter:
            if i == len(founds):  # the traced-reach phase
                assert phase is not None
                phase.reports = apply(lint, outcome)
                if cache is not None and phase_key is not None and outcome.complete:
                    cache.put(phase_key, outcome.to_dict())
                continue
            outcomes[i], fresh[i] = outcome, True
            _tell(event="done", target=founds[i].label,
                  findings=sum(1 for r in outcome.reports for f in r["findings"] if f["severity"] != "info"))
            while next_index < len(founds) and outcomes[next_index] is not None:
                reports.append(_finish(lint, outcomes[next_index], cache, keys, next_index, fresh[next_index]))
                next_index += 1
    finally:
        close = getattr(outcomes_iter, "close", None)
        if close is not None:
            close()
    while next_index < len(founds):
        reports.append(_finish(lint, outcomes[next_index], cache, keys, next_index, fresh[next_index]))
        next_index += 1
    if pooled and cache is not None:  # the next run's cost estimates (`_schedule.estimate`)
        cache.put_durations(TASK_SECONDS)
    return reports


def _in_process(lint: Lint, founds: Sequence[Item], todo: list[int], release: bool
                ) -> Iterator[tuple[int, Outcome]]:
    """The targets checked in this process, one after the other. Under `jaxdiag check` (`release`), memory is
    bounded as in a worker: past WORKER_MEMORY_MB after a target, JAX's caches are cleared (else they grow by
    about 13 MB per target), as `MemoryBound` says. The Python API leaves the caller's JAX caches alone."""
    from . import _reach

    _reach.pin_live(founds[i] for i in todo)  # before any target runs, as a worker does (`RecordedCall.obj`)
    bound = MemoryBound() if release else None
    for i in todo:
        outcome = run_in_process(lint, founds[i])
        if bound is not None:
            rss, cleared = bound.after_target()
            LAST_RUN["peak_worker_mb"] = max(LAST_RUN.get("peak_worker_mb", 0.0), rss)
            LAST_RUN["cache_clears"] = LAST_RUN.get("cache_clears", 0) + cleared
        yield i, outcome


def _finish(lint: Lint, outcome: Outcome | None, cache: _cache.ResultCache | None,
            keys: list[str | None] | None, index: int, fresh: bool) -> list[TargetReport]:
    assert outcome is not None
    reports = apply(lint, outcome)
    key = keys[index] if keys is not None else None
    if fresh and cache is not None and key is not None and outcome.complete:
        cache.put(key, outcome.to_dict())
    return reports


def _items_for_workers(items: Sequence[ModuleType | str]) -> list[str] | None:
    """What a worker imports to find the same targets; None when a module object cannot be re-imported by name."""
    out = []
    for item in items:
        if isinstance(item, ModuleType):
            import importlib.util

            try:
                if importlib.util.find_spec(item.__name__) is None:
                    return None
            except (ImportError, ValueError):
                return None
            out.append(item.__name__)
        else:
            out.append(item)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Workers
# ---------------------------------------------------------------------------------------------------------------


def _setup_of(lint: Lint, items: list[str], settings: RunSettings) -> WorkerSetup:
    return WorkerSetup(items, lint.app_dir, lint.seed, lint.discovery.keep_going, lint.discovery.include_tests,
                       os.getcwd(), list(sys.path), _xla_cache_dir(lint, settings), type(lint),
                       dict(getattr(lint, "run_options", {})), dict(lint.discovery.crashed))


@contextlib.contextmanager
def run_workers(lint: Lint, items: Sequence[ModuleType | str], settings: RunSettings) -> Iterator[None]:
    """What lasts as long as one `jaxdiag check` run (`_lint.run` holds it around its walk and every batch of
    work): the temporary compilation cache, and the workers between batches (`_workers.Standby`). On a cold run
    (no result cache, or one that holds nothing yet) the first worker starts now, so that its import of the user's
    package overlaps the parent's walk of it; the others start once the walk says how much work there is (a small
    project on a many-core machine starts no idle worker). One, not `jobs`: the parent and one worker fill two cores,
    and a second importing beside them slowed both (jax-md, 2 cores: 20.3/19.9 s with two, 18.9/18.4 s with one,
    22-24 s with none). On a run the result cache may answer, workers start only when work is left."""
    scratch = scratch_folder() if settings.bound_memory else None
    settings.scratch_xla = scratch
    settings.standby = Standby()
    try:
        worker_items = None if settings.in_process else _items_for_workers(items)
        if worker_items is not None and not _cache.holds_results(settings.cache, lint.config.source):
            settings.standby.start(_setup_of(lint, worker_items, settings), 1)
        yield
    finally:
        settings.standby.close()
        settings.standby = None
        settings.scratch_xla = None
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def _xla_cache_dir(lint: Lint, settings: RunSettings) -> str | None:
    """Where this run's processes share JAX's persistent compilation cache: `xla/` in the result cache's folder,
    else (`--no-cache`, or a cache folder refused as untrusted: another user could plant executables there) a
    folder of this run only (`settings.scratch_xla`), removed when the run ends."""
    if settings.cache:
        root = _cache.cache_root(lint.config.source)
        try:
            if root is not None and _cache.ensure_root(root) is None:
                return str(root / "xla")
        except OSError:  # a read-only checkout: no compilation cache either
            return None
    return settings.scratch_xla


@contextlib.contextmanager
def _run_compilation_cache(lint: Lint, settings: RunSettings) -> Iterator[None]:
    """The compilation cache of one `jaxdiag check` run (`settings.bound_memory`). Targets compile mostly the same
    small programs (the same operations on the same shapes): with a cache, a second worker, or this process after
    it cleared JAX's caches to bound its memory, loads them instead of compiling them again. Without the result
    cache the folder is temporary, so nothing outlives the run. In this process JAX's settings are restored after
    the run."""
    # also with the result cache: its folder may be refused (`_xla_cache_dir`), and the run then uses this one;
    # under `run_workers` the run's own
    scratch = scratch_folder() if settings.bound_memory and settings.scratch_xla is None else None
    if scratch is not None:
        settings.scratch_xla = scratch
    folder = _xla_cache_dir(lint, settings) if settings.bound_memory else None
    try:
        if folder is not None and settings.in_process:
            from .. import _compat

            with _compat.compilation_cache(folder):
                yield
        else:
            yield
    finally:
        if scratch is not None:
            settings.scratch_xla = None
            shutil.rmtree(scratch, ignore_errors=True)


def schedule(founds: Sequence[Item | TracedPhase], todo: Sequence[int], slots: int, known: Mapping[str, float]
             ) -> _schedule.Schedule:
    """The order the workers take `todo` in (`_schedule`): grouped by module, costs from `known` or by kind."""
    tasks = []
    for index in todo:
        item = founds[index]
        key = task_key(item)
        if isinstance(item, TracedPhase):
            tasks.append(_schedule.Task(index, key, _schedule.estimate(key, "traced-reach", known)))
        else:
            tasks.append(_schedule.Task(index, item.walked.label, _schedule.estimate(key, item.kind, known)))
    return _schedule.Schedule(tasks, slots)


class _Pool:
    def __init__(self, setup: WorkerSetup, settings: RunSettings, standby: Standby | None = None) -> None:
        self.setup = setup
        self.standby = standby or Standby()
        self.timeout = settings.timeout or None
        self.jobs = max(settings.jobs, 1)
        self.phase_index: int | None = None  # the traced-reach phase's task, when the pool runs it (no time limit)
        self.phase_again = False  # it crashed in a unit: to be run again without that unit

    def run(self, lint: Lint, founds: Sequence[Item], todo: list[int], phase: TracedPhase | None = None,
            known: Mapping[str, float] | None = None) -> Iterator[tuple[int, Outcome]]:
        """(index, outcome) as targets finish, in any order; the traced-reach phase's, when given, as index
        `len(founds)` (none when a worker raised in it: the caller runs it; after a crash in it, the phase runs
        again in a new worker without the unit that crashed, `TracedPhase.crashed`). `known`: seconds each task took
        in a previous run, by task key (the schedule's costs). Workers are killed when the iterator is closed."""
        self.phase_index = len(founds) if phase is not None else None
        if phase is not None:
            founds = [*founds, phase]  # type: ignore[list-item]
            todo = [*todo, len(founds) - 1]
        queue = schedule(founds, todo, self.jobs, known or {})
        workers = [self.standby.take(self.setup, slot) for slot in range(min(self.jobs, len(todo)))]
        LAST_RUN.update(workers_started=len(workers), peak_worker_mb=0.0, cache_clears=0, pool_started=time.monotonic())
        TIMELINE.clear()
        TASK_SECONDS.clear()
        try:
            while queue or self.phase_again or any(w.task is not None for w in workers):
                for w in workers:
                    if w.ready and w.task is None and self.phase_again and phase is not None:  # after a crash
                        self.phase_again = False
                        w.send(len(founds) - 1, TRACED_LABEL, phase.skip, phase.checked)
                    elif w.ready and w.task is None and queue:
                        index = queue.take(w.slot)
                        task = founds[index]
                        w.send(index, task_key(task), checked=task.checked if isinstance(task, TracedPhase) else ())
                busy = [w for w in workers if w.task is not None or not w.ready]
                if not busy:
                    break
                ready_conns = wait([w.conn for w in busy], timeout=self._wait_time(busy))
                for w in list(workers):
                    if w.conn in ready_conns:
                        yield from self._receive(w, workers, lint, founds, queue)
                    elif self._overdue(w):
                        yield from self._expire(w, workers, lint, founds, queue)
        finally:
            for w in workers:
                self.standby.give_back(w)

    def _wait_time(self, busy: list[Worker]) -> float | None:
        now = time.monotonic()
        limits = [w.spawned + WORKER_START_SECONDS - now for w in busy if not w.ready]
        if self.timeout:
            limits += [self._started(w) + self.timeout - now for w in busy if w.ready and w.task is not None
                       and (w.task != self.phase_index or w.unit)]
        return max(min(limits), 0.0) + 0.01 if limits else None

    def _overdue(self, w: Worker) -> bool:
        now = time.monotonic()
        if not w.ready:
            return now > w.spawned + WORKER_START_SECONDS
        return bool(self.timeout and w.task is not None and (w.task != self.phase_index or w.unit)
                    and now > self._started(w) + self.timeout)

    def _started(self, w: Worker) -> float:
        """When the time limit started: its task's start; for the traced-reach phase, its current unit's (the
        phase itself has none)."""
        return w.unit_started if w.task == self.phase_index else w.task_started

    def _replace(self, w: Worker, workers: list[Worker], queue: _schedule.Schedule, killed: bool) -> None:
        w.kill() if killed else w.stop()
        workers.remove(w)
        if queue or self.phase_again:
            workers.append(Worker(self.setup, w.slot))
            LAST_RUN["workers_started"] += 1

    def _receive(self, w: Worker, workers: list[Worker], lint: Lint, founds: Sequence[Item],
                 queue: _schedule.Schedule) -> Iterator[tuple[int, Outcome]]:
        try:
            message = w.conn.recv()
        except (EOFError, OSError):  # the worker died: a crash in native code, or killed from outside
            w.proc.join(5)
            code = w.proc.exitcode
            index = w.task
            phase = founds[index] if index is not None and index == self.phase_index else None
            if isinstance(phase, TracedPhase):  # run it again without the unit, or give up with the crashes
                self.phase_again = phase.crashed(w.unit, w.running, code, inputs=w.inputs)
            self._replace(w, workers, queue, killed=True)
            if index is None:
                raise RuntimeError(f"a jaxdiag worker process exited while starting (exit code {code})") from None
            if index != self.phase_index:
                yield index, crashed(founds[index], w.running, code, w.inputs)
            elif isinstance(phase, TracedPhase) and not self.phase_again:
                yield index, phase.with_crashes(None)
            return
        kind = message[0]
        if kind == "ready":
            w.ready = True
            TIMELINE.append({"slot": w.slot, "event": "ready", "at": time.monotonic(), "since": w.spawned})
        elif kind == "unit":
            w.unit, w.running, w.unit_started, w.inputs = message[1], "", time.monotonic(), None
        elif kind == "check":
            w.running, w.inputs = f"{message[1]}: {message[2]}", message[3]
            if message[2]:  # "" while inferring inputs: no check yet
                _tell(event="check", target=message[1], check=message[2])
        elif kind == "done":
            _, index, data, rss, after, cleared, seconds = message
            TASK_SECONDS[task_key(founds[index])] = seconds
            TIMELINE.append({"slot": w.slot, "event": "done", "index": index, "at": time.monotonic(),
                             "sent": w.task_started, "seconds": seconds, "cleared": cleared})
            w.task = None
            LAST_RUN["peak_worker_mb"] = max(LAST_RUN.get("peak_worker_mb", 0.0), rss)
            LAST_RUN["cache_clears"] += cleared
            limit = retire_limit(w.floor_mb) if cleared else None
            if cleared and w.floor_mb is None:
                w.floor_mb = after
            if limit is not None and after > limit:  # clearing JAX's caches was not enough
                self._replace(w, workers, queue, killed=False)
            phase = founds[index] if index == self.phase_index else None
            outcome = Outcome.from_dict(data)
            yield index, phase.with_crashes(outcome) if isinstance(phase, TracedPhase) and phase.crashes else outcome
        elif kind == "missing":  # the worker did not find the target (a module object given to the API)
            w.task = None
            index = message[1]
            if index != self.phase_index:
                yield index, run_in_process(lint, founds[index])
        elif kind == "broken":
            raise RuntimeError(f"a jaxdiag worker process could not rebuild the run:\n{message[1]}")
        elif kind == "raised":  # jaxdiag's own error in the worker: that target's internal error, the run goes on
            index = message[1]
            w.task = None
            self._replace(w, workers, queue, killed=True)
            if index != self.phase_index:
                yield index, internal(founds[index], f"internal error in a worker process:\n{message[2]}")

    def _expire(self, w: Worker, workers: list[Worker], lint: Lint, founds: Sequence[Item],
                queue: _schedule.Schedule) -> Iterator[tuple[int, Outcome]]:
        index = w.task
        if not w.ready:
            self._replace(w, workers, queue, killed=True)
            raise RuntimeError(f"a jaxdiag worker process did not start within {WORKER_START_SECONDS:.0f} s")
        assert index is not None and self.timeout
        seconds = time.monotonic() - self._started(w)
        running, inputs = w.running, w.inputs
        phase = founds[index] if index == self.phase_index else None
        if isinstance(phase, TracedPhase):  # one unit ran past the limit: the phase again without it
            self.phase_again = phase.crashed(w.unit, running, None, stopped_after=(seconds, self.timeout),
                                             inputs=inputs)
        self._replace(w, workers, queue, killed=True)
        if not isinstance(phase, TracedPhase):
            yield index, timed_out(lint, founds[index], running, seconds, self.timeout, inputs)
        elif not self.phase_again:
            yield index, phase.with_crashes(None)


