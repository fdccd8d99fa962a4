"""`jaxdiag check`'s worker processes: how one is started, what it runs, and the workers a run keeps ready.

Workers are forked from a fork server that imported JAX and jaxdiag once (`worker_context`; `spawn` where there is
none; never a plain fork of the checking process, as JAX is not fork-safe: a forked child inherits XLA's threads in
whatever state they were), import the user's modules and discover the same targets as the parent (`worker_main`),
then run the targets they are sent one at a time. `_parallel` decides what each one runs.

A worker's start costs what importing the user's package costs, and that is most of a cold run's wait when the
package computes at import (a molecular-dynamics package: 5.5 s, the parent's own import of it 6 s before). On a
cold run the first worker is therefore started before the parent walks the package (`Standby`), so its import
overlaps the parent's, and a worker left idle by one batch of work (the targets) serves the next (the traced-reach
phase) instead of a new worker importing everything again.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from . import _units
from ._keys import TRACED_LABEL, TracedPhase
from ._memory import MemoryBound, exit_with_parent, rss_mb, use_compilation_cache
from ._outcome import run_in_process
from .._core._report import Location

if TYPE_CHECKING:
    from . import _reach
    from ._discovery import Found


@dataclass
class WorkerSetup:
    """Everything a spawned worker needs to rebuild the parent's lint state (all picklable)."""

    items: list[str]
    app_dir: str
    seed: int
    keep_going: bool
    include_tests: bool
    cwd: str
    sys_path: list[str]
    xla_cache_dir: str | None = None
    lint_class: Any = None  # `_lint._Lint`, passed by reference (importing it here would be a cycle)
    run_options: dict[str, Any] | None = None  # the `Options` fields every target's run gets (`_Lint.run_options`)
    crashed_imports: dict[str, Any] | None = None  # modules whose import killed a walk: never imported again


def worker_main(conn: Connection, setup: WorkerSetup) -> None:
    """A worker: rebuild the discovery, then check the targets the parent sends until it sends None. Ctrl-C is
    the supervisor's to handle: a `KeyboardInterrupt` here is the user code's own (`user_interrupts`)."""
    import signal

    from .._harness import user_interrupts

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    user_interrupts(True)
    exit_with_parent()
    try:
        os.chdir(setup.cwd)
        sys.path[:] = setup.sys_path
        if setup.xla_cache_dir:
            use_compilation_cache(setup.xla_cache_dir)
        from .._core import _config
        from .._run import _engine
        from . import _reach

        # select/ignore are the parent's business: targets are checked unfiltered and filtered once, there
        lint = setup.lint_class(_config.load(setup.app_dir), setup.app_dir, setup.seed, [], [], setup.keep_going,
                                setup.include_tests, setup.crashed_imports)
        lint.run_options = dict(setup.run_options or {})
        lint.discovery.walk(setup.items, from_config=False)
        discovered = lint.discover()  # also claims its recorded calls: the rest are `recorded_items`
        recorded = lint.recorded_items()
        _reach.pin_live(recorded)  # before any target runs (`RecordedCall.obj`)
        founds: dict[str, Found | _reach.RecordedCall] = {found.label: found for found in discovered}
        founds.update((item.task_key, item) for item in recorded)
        phase = TracedPhase(discovered)
    except BaseException:  # noqa: BLE001 - the parent must hear why the worker cannot run
        conn.send(("broken", traceback.format_exc()))
        return

    def started(subject: str, check: str, inputs: dict[str, Any]) -> None:
        conn.send(("check", subject, check, inputs))

    _engine.on_check_start = started
    _units.on_unit_start = lambda label: conn.send(("unit", label))
    bound = MemoryBound()
    conn.send(("ready",))
    while True:
        task = conn.recv()
        if task is None:
            return
        index, label, skip, checked = task
        found = phase if label == TRACED_LABEL else founds.get(label)
        if found is None:
            conn.send(("missing", index))
            continue
        started_at = time.perf_counter()
        try:
            outcome = (found.run(lint, checked, skip) if isinstance(found, TracedPhase)
                       else run_in_process(lint, found))
        except BaseException:  # noqa: BLE001 - jaxdiag's own error: the parent reports it for this target
            conn.send(("raised", index, traceback.format_exc()))
            return
        seconds = time.perf_counter() - started_at
        rss, cleared = bound.after_target()
        conn.send(("done", index, outcome.to_dict(), rss, rss_mb(), cleared, seconds))


# What the workers' fork server imports: the same as the supervisor's (`_supervisor.PRELOAD`, which this child-side
# module does not import: the parent side never depends on the child side).
WORKER_PRELOAD = ["jaxdiag._jobs._preload"]


def worker_context() -> Any:
    """A fork server that has imported JAX and all of jaxdiag once (`WORKER_PRELOAD`; it never runs user code
    nor initialises an XLA backend), where the platform has one: each worker, and each replacement of a worker that
    timed out or grew too large, is forked from it ready to check, instead of a spawned interpreter importing
    everything again. Under the CLI that server is the supervised child's own fork made before any user code ran
    (`_worker_server`), so JAX is not imported a second time. Else `spawn`. Never a plain fork of this process
    (JAX is not fork-safe)."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(WORKER_PRELOAD)
        return ctx
    return multiprocessing.get_context("spawn")


class Worker:
    def __init__(self, setup: WorkerSetup, slot: int) -> None:
        ctx = worker_context()
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child, setup), name="jaxdiag-worker", daemon=True)
        try:
            self.proc.start()
        except OSError:  # no fork server here (its socket path is too long under a deep TMPDIR): spawn instead
            ctx = multiprocessing.get_context("spawn")
            self.conn, child = ctx.Pipe()
            self.proc = ctx.Process(target=worker_main, args=(child, setup), name="jaxdiag-worker", daemon=True)
            self.proc.start()
        child.close()
        self.spawned = time.monotonic()
        self.ready = False
        self.task: int | None = None
        self.task_started = 0.0
        self.running = ""  # "subject: check" the worker said it started last
        self.inputs: dict[str, Any] | None = None  # the inputs it said that check runs on (`_provenance`)
        self.unit = ""  # the traced-reach phase's unit it said it started last
        self.unit_started = 0.0
        self.slot = slot  # whose chunk of targets it works through (`_schedule`); a replacement keeps it
        self.floor_mb: float | None = None  # what its first clearing of JAX's caches left (`retire_limit`)

    def send(self, index: int, label: str, skip: Sequence[str] = (), checked: Sequence[Location] = ()) -> None:
        self.conn.send((index, label, list(skip), list(checked)))
        self.task = index
        self.task_started = time.monotonic()
        self.running = self.unit = ""
        self.inputs = None

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.proc.join(10)
        self.kill()

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()
        self.conn.close()


class Standby:
    """The run's workers between batches of work: started before the parent walks the package (`start`), taken by
    each batch (`take`), given back when a batch leaves them idle (`give_back`), stopped when the run ends
    (`close`). Its `setup` is every worker's, replacements included: a worker walks the package itself, so the
    parent's `sys.path` after its own walk adds nothing the worker's walk does not."""

    def __init__(self) -> None:
        self.setup: WorkerSetup | None = None
        self.idle: list[Worker] = []

    def start(self, setup: WorkerSetup, count: int) -> None:
        self.setup = setup
        self.idle = [Worker(setup, slot) for slot in range(count)]

    def take(self, setup: WorkerSetup, slot: int) -> Worker:
        """An idle worker (ready or still starting) for `slot`, else a new one."""
        if self.idle:
            worker = self.idle.pop(0)
            worker.slot = slot
            return worker
        return Worker(setup, slot)

    def give_back(self, worker: Worker) -> None:
        """A worker the batch is done with: kept while it is alive and idle, else stopped."""
        if worker.task is None and worker.proc.is_alive():
            self.idle.append(worker)
        else:
            worker.kill() if worker.task is not None else worker.stop()

    def close(self) -> None:
        """Stop every idle worker: one still starting is killed (it holds nothing and would finish importing
        first), a ready one is asked to exit."""
        for worker in self.idle:
            worker.stop() if worker.ready else worker.kill()
        self.idle = []
