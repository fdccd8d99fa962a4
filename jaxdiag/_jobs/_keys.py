"""The result cache's side of a `jaxdiag check` run (`_parallel`): each work item's key, and the traced-reach
phase (`_traced_reach`, the rules made in factories and closures) as a work item of its own, cached like a target.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from . import _cache
from ._outcome import Lint, Outcome, apply
from .._core._report import Location, TargetReport, target_report_to_dict

if TYPE_CHECKING:
    from . import _reach
    from ._discovery import Found


TRACED_LABEL = "(traced reach)"


@dataclass
class TracedPhase:
    """The run's traced-reach phase (`_traced_reach.check_by_tracing`: the rules made in factories and closures,
    reached through the package's own functions) as one more task of the workers. It depends on the targets'
    results only through the recorded rules they checked, so when no recorded call is left to check it need not
    wait for them: a worker starts with it (it is among the longest tasks of a run) while the other checks targets,
    instead of this process running it alone after the pool has stopped. The pool sets `reports`; when it could not
    (a worker raised in it: jaxdiag's own error), `reports` stays None and the phase runs in this process.
    It has no time limit (it never had one: it is not a target).

    A crash (a segfault in a callback's host code, an `os._exit`) kills the worker running the phase, and a unit
    running past the per-target time limit is stopped like a target. The pool then runs the phase again in a new
    worker without that unit (`crashes`, `skip`), up to MAX_CRASHES times, and adds each one's blocking report to
    the phase's (`with_crashes`): never again in this process, where the same crash would end the whole run and
    every target's report with it."""

    discovered: Sequence[Found]
    # the recorded rules already checked (a recorded call's): when recorded calls were left for the targets' run,
    # the phase runs after it, still in a worker (`_lint.run`)
    checked: Sequence[Location] = ()
    reports: list[TargetReport] | None = None
    label: str = TRACED_LABEL
    task_key: str = TRACED_LABEL
    # (the unit it was in, "subject: check" it was running, the exit code, (seconds, limit) when it was stopped at
    # the time limit, the inputs that check ran on) for each crash of the phase
    crashes: list[tuple[str, str, int | None, tuple[float, float] | None, dict[str, Any] | None]] = field(
        default_factory=list)

    MAX_CRASHES: ClassVar[int] = 3

    @property
    def skip(self) -> list[str]:
        return [unit for unit, *_ in self.crashes if unit]

    def crashed(self, unit: str, running: str, code: int | None,
                stopped_after: tuple[float, float] | None = None, inputs: dict[str, Any] | None = None) -> bool:
        """Record a crash, or a unit stopped at the per-target time limit (`stopped_after`: its seconds and the
        limit; `inputs`: what the check running then ran on); whether the phase runs again (the unit is known, and
        retries are left)."""
        self.crashes.append((unit, running, code, stopped_after, inputs))
        return bool(unit) and len(self.crashes) <= self.MAX_CRASHES

    def with_crashes(self, outcome: Outcome | None) -> Outcome:
        """The phase's outcome (None: it never finished) with a blocking report per crash; never cached."""
        from ._outcome import crashed_unit

        out = outcome or Outcome()
        units = {unit or self.label for unit, *_ in self.crashes}
        # a crashed unit's report replaces what the next run said of it (its sites unreached, having been skipped)
        out.reports = [*(r for r in out.reports if r["target"] not in units),
                       *(crashed_unit(unit or self.label, running, code, stopped, inputs)
                         for unit, running, code, stopped, inputs in self.crashes)]
        out.complete = out.complete and not self.crashes
        out.live = None
        return out

    def run(self, lint: Lint, checked: Sequence[Location] = (), skip: Sequence[str] = ()) -> Outcome:
        from . import _traced_reach

        saved = lint.unchecked_lines
        lint.unchecked_lines = set()
        try:
            reports = _traced_reach.check_by_tracing(lint, list(self.discovered), checked, skip)
            outcome = Outcome(reports=[target_report_to_dict(r) for r in reports],
                              unchecked_lines=sorted(lint.unchecked_lines),
                              complete=not any(r.internal_errors or r.problems for r in reports))
        finally:
            lint.unchecked_lines = saved | lint.unchecked_lines
        outcome.live = reports
        return outcome


def cache_keys(lint: Lint, founds: Sequence[Found | _reach.RecordedCall]
               ) -> tuple[_cache.ResultCache | None, list[str | None] | None]:
    """The run's result cache and each target's key; (None, None) when the cache folder is refused (warned)."""
    from . import _reach

    opened = _open_run_cache(lint)
    if opened is None:
        return None, None
    cache, environment, graph = opened
    keys: list[str | None] = []
    for found in founds:
        if isinstance(found, _reach.RecordedCall):
            keys.append(_recorded_key(environment, graph, found))
            continue
        keys.append(_cache.target_key(environment, found.label, found.kind, graph.files_of(_modules_of(found))))
    return cache, keys


def _open_run_cache(lint: Lint) -> tuple[_cache.ResultCache, str, _cache.SourceGraph] | None:
    """The run's result cache, its environment fingerprint and source graph, made once per run (kept on the lint
    object, which lives as long as the run); None when the cache folder is refused (warned once)."""
    held: dict[str, Any] = vars(lint).setdefault("_result_cache", {})
    if "opened" not in held:
        cache = _cache.open_cache(lint.config.source)
        held["opened"] = None if cache is None else (
            cache, _cache.environment_fingerprint(seed=lint.seed, config=lint.config, app_dir=lint.app_dir),
            _cache.SourceGraph())
    opened: tuple[_cache.ResultCache, str, _cache.SourceGraph] | None = held["opened"]
    return opened


def _modules_of(found: Found) -> list[ModuleType]:
    """A discovered target's module and the modules defining its rules (what its cache key hashes, with what they
    import)."""
    from .. import _compat

    modules = [found.walked.module]
    rule_fns = list(_compat.registered_rules(found.obj).values()) if found.kind == "primitive" else [
        getattr(found.obj, name, None) for name in ("fun", "fwd", "bwd", "jvp", "vmap_rule")]
    for fn in rule_fns:
        owner = sys.modules.get(getattr(fn, "__module__", None) or "") if fn is not None else None
        if owner is not None:
            modules.append(owner)
    return modules


def check_traced(lint: Lint, discovered: Sequence[Found], checked: Sequence[Location],
                 use_cache: bool) -> list[TargetReport]:
    """The rules reached by tracing the package's own functions (`_traced_reach.check_by_tracing`, a phase over the
    whole run after its targets), through the result cache: nothing changed, its reports are read back instead of
    planned, traced and checked again (several seconds on this project's samples, in every re-run). Its key is the
    environment, the source of every walked module and of the discovered targets' rules (with what they import),
    the discovered targets and the recorded rules already checked; like a target's, only a complete result is
    stored."""
    cache, key = (traced_key(lint, discovered, checked) if use_cache else (None, None))
    if cache is not None and key is not None:
        hit = cache.get(key)
        if hit is not None:
            return apply(lint, Outcome.from_dict(hit))
    outcome = TracedPhase(discovered).run(lint, checked)
    if cache is not None and key is not None and outcome.complete:
        cache.put(key, outcome.to_dict())
    return apply(lint, outcome)


def traced_key(lint: Lint, discovered: Sequence[Found], checked: Sequence[Location]
                ) -> tuple[_cache.ResultCache | None, str | None]:
    opened = _open_run_cache(lint)
    if opened is None:
        return None, None
    cache, environment, graph = opened
    modules = [w.module for w in lint.discovery.walked] + [m for f in discovered for m in _modules_of(f)]
    files = graph.files_of(modules)
    what = [[f.label, f.kind] for f in discovered] + [[c.path, str(c.line), c.function] for c in checked]
    label = "(traced reach) " + _cache._digest([what, repr(sorted(getattr(lint, "run_options", {}).items()))])
    return cache, _cache.target_key(environment, label, "traced-reach", files)


def _recorded_key(environment: str, graph: _cache.SourceGraph, item: _reach.RecordedCall) -> str | None:
    """A recorded call's cache key: the recording itself is in `environment`; the code is its module's, its
    carrier's and the walked module's (where a factory's closure lives), with what they import. None (never
    cached) when its carrier was not imported in this process: its files, and so a stale verdict, are unknown."""
    names = [item.label.partition(":")[0], (item.call.get("via") or {}).get("target", "").partition(":")[0]]
    modules = [item.walked.module]
    for name in filter(None, names):
        module = sys.modules.get(name)
        if module is None:
            return None
        modules.append(module)
    return _cache.target_key(environment, item.task_key, item.kind, graph.files_of(modules))
