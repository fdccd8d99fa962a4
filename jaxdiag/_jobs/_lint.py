"""`jaxdiag check`: discover targets in modules, packages and files, run every check, report like a linter.

Discovery (`_discovery.py`) imports what the user named and finds the targets. Example inputs come from
`[tool.jaxdiag.targets."<target>"]`, else from a `JAXDIAG = {"attr": {"args": [...], "params": {...}}}` dict in
the defining module, else the engine infers them (a target it cannot infer becomes a JXN004 note that says what
to add to pyproject.toml). Every target is checked unfiltered; `_filtering.Filter` filters the whole report once
at the end, and suppressions that suppressed nothing are reported as JXN005, as ruff's RUF100 does.
"""

from __future__ import annotations

import json

import os
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from .. import __version__, _compat
from . import _call_sites, _keys, _parallel, _reach
from .._core import _config, _locate
from .._run import _anchors, _engine
from .. import _rules as rules
from .._checks._base import Options
from ._discovery import Discovery, Found, _posix, _unjit
from ._outcome import internal_report
from .._core._errors import InferenceError, UsageError
from .._core._filtering import Filter, unused_inline, validate_inline
from .._core._report import CheckResult, Location, Report, TargetReport
from .._loading._targets import Target
from .._run._signature import required_params

# ---------------------------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------------------------


def check_module(
    module_or_path: ModuleType | str,
    *,
    seed: int | None = None,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    app_dir: str = ".",
    keep_going: bool = False,
    include_tests: bool = False,
) -> Report:
    """Discover and check every target in a module, package, file or folder, as `jaxdiag check` does.

    `module_or_path` is a module object, a dotted module name or a path. `[tool.jaxdiag]` in the nearest
    pyproject.toml (from `app_dir`) supplies per-target inputs and ignores; `select`/`ignore` add to it.
    """
    return check_paths([module_or_path], app_dir=app_dir, seed=seed, select=select, ignore=ignore,
                       keep_going=keep_going, include_tests=include_tests)


def check_paths(
    paths: Sequence[ModuleType | str],
    app_dir: str = ".",
    seed: int | None = None,
    select: Sequence[str] = (),
    ignore: Sequence[str] = (),
    keep_going: bool = False,
    include_tests: bool = False,
    jobs: int = 1,
    timeout: float | None = None,
    cache: bool = False,
    bound_memory: bool = False,
    isolate: bool = False,
    crashed_imports: dict[str, dict[str, Any]] | None = None,
    **run_options: Any,
) -> Report:
    """`jaxdiag check [PATHS]`: with no paths, `[tool.jaxdiag] paths`; with neither, a UsageError (exit 2).

    `jobs` worker processes (1: this process), `timeout` seconds per target (None: no limit; a limit runs the
    targets in worker processes), `cache`: reuse results from `.jaxdiag_cache/` (see `_parallel`,
    `_cache`); `bound_memory`: clear JAX's caches between targets checked in this process when it grows past
    the workers' bound (the CLI; the Python API leaves its caller's caches alone); `isolate`: every target in a
    worker process, whatever `jobs` and `timeout` are (the CLI's child: a crash ends a worker, never the run).
    `crashed_imports`: modules whose import killed an earlier walk (the supervisor's, with `keep_going`): reported
    as that crash and not imported again. `run_options` are further
    `Options` fields (`fixes`, `show_jaxpr`, `platforms`).
    """
    config = _config.load(app_dir)
    from_config = not paths
    items: list[ModuleType | str] = list(paths) if paths else _config_paths(config)
    if not items:
        raise UsageError("nothing to check: name modules, packages or files (e.g. `jaxdiag check mypkg`) or set "
                         "`paths = [\"mypkg\"]` under [tool.jaxdiag] in pyproject.toml")
    lint = _Lint(config, app_dir, seed if seed is not None else config.seed,
                 list(select) or config.select, list(ignore) + config.ignore, keep_going, include_tests,
                 crashed_imports)
    lint.settings = _parallel.RunSettings(jobs=jobs, timeout=timeout, cache=cache,
                                           bound_memory=bound_memory, isolate=isolate)
    lint.run_options = run_options  # Options fields for every target's run
    with _engine.RUN_LOCK, _compat.run_scope():  # user folders stay importable for the run only
        return lint.run(items, from_config=from_config)


def _config_paths(config: _config.Config) -> list[ModuleType | str]:
    """Config paths are relative to the pyproject.toml that names them; module names stay as they are."""
    base = Path(config.source).parent if config.source else Path.cwd()
    out: list[ModuleType | str] = []
    for item in config.paths:
        candidate = base / item
        out.append(_locate.relative_path(str(candidate)) if candidate.exists() else item)
    return out


class _Lint:
    def __init__(self, config: _config.Config, app_dir: str, seed: int, select: list[str], ignore: list[str],
                 keep_going: bool, include_tests: bool, crashed_imports: dict[str, dict[str, Any]] | None = None):
        self.config = config
        self.app_dir = app_dir
        self.seed = seed
        self.discovery = Discovery(config, app_dir, keep_going, include_tests, crashed_imports)
        # validates every code before anything is imported or checked (unknown codes are exit 2)
        self.filter = Filter(select, ignore, config.per_target_ignores, config.allow_unchecked)
        self.unchecked_lines: set[tuple[str, int]] = set()
        config_dir = os.path.dirname(config.source) if config.source else os.getcwd()
        self.recorded = _reach.Recorded.load([config_dir, app_dir, os.getcwd()])
        self.settings = _parallel.RunSettings()
        self.run_options: dict[str, Any] = {}  # `Options` fields every target's run gets (--diff, --platforms, ...)

    def run(self, items: Sequence[ModuleType | str], from_config: bool) -> Report:
        """Walk, check every target (unfiltered), then filter once; unused suppressions are judged last. The run's
        first worker starts before the walk (`_parallel.run_workers`)."""
        with _parallel.run_workers(self, items, self.settings):
            return self._run_all(items, from_config)

    def _run_all(self, items: Sequence[ModuleType | str], from_config: bool) -> Report:
        self.discovery.walk(items, from_config)
        for walked in self.discovery.walked:  # unknown codes in inline comments: exit 2 before any check
            where = getattr(walked.module, "__file__", None)
            if where and where.endswith(".py"):
                validate_inline(where)
        reports: list[TargetReport] = list(self.discovery.failed)
        discovered = self.discover()
        unclaimed = self.recorded_items()
        # the recorded calls are work items after the targets: the same time limit, workers, memory bound, cache
        # with no recorded call left, the traced-reach phase below needs no target's result: a worker starts it
        phase = _keys.TracedPhase(discovered) if not unclaimed else None
        per_item = _parallel.check_items(self, [*discovered, *unclaimed], items, self.settings, phase)
        reports.extend(r for item_reports in per_item[:len(discovered)] for r in item_reports)
        _reach.fold_into_rule_holder(discovered, reports)
        recorded = [(item.call, item_reports) for item, item_reports in zip(unclaimed, per_item[len(discovered):])]
        # rules made in factories and closures, callback call sites: reached through the package's own functions
        # (a site whose rule a recorded call checked is covered: never checked twice). With recorded calls, after
        # them, and still in a worker: a crash or hang while tracing must not end this process
        checked = _reach.checked_sites(recorded)
        if phase is None:
            phase = _keys.TracedPhase(discovered, checked)
            _parallel.check_items(self, [], items, self.settings, phase)
        traced = phase.reports if phase.reports is not None else _keys.check_traced(
            self, discovered, checked, self.settings.cache)
        reports.extend(_reach.drop_reached_elsewhere(recorded, traced))
        reports.extend(traced)
        if self.config.sharding:  # opt-in: a child process on virtual devices
            from .._mesh import _sharding

            reports.extend(_sharding.lint_sharding(self, discovered))
        report = self.filter.apply(Report(reports, jaxdiag_version=__version__, jax_version=_compat.JAX_VERSION))
        for target in report.targets:  # SARIF and GitHub annotations need a file and line for every finding
            for finding in target.findings:
                if finding.location is None and target.anchors:
                    finding.location = target.anchors[0]
        notes = self.filter.apply(Report(self._run_notes(report_stale_keys=from_config)))
        report.targets.extend(t for t in notes.targets if t.findings)
        if not any(t.counted for t in report.targets) and not self.discovery.failed:
            # nothing discovered is nothing verified: an empty `check` never passes (unless allowed by name)
            empty = TargetReport("(no targets)", "config", unverified="no-targets")
            empty.allowed = self.filter._allowed(empty)
            report.targets.append(empty)
        return report

    def discover(self) -> list[Found]:
        """The discovered targets, with the recorded calls they claim marked here (also when workers check them:
        the calls no target claims are `recorded_items`, checked after the targets)."""
        discovered = self.discovery.discover()
        if self.recorded.calls:
            self.recorded.note_sites((f.obj, f.kind) for f in discovered)
            for found in discovered:
                self.recorded.for_keys(self._recorded_keys(found), found.obj, found.kind)
        return discovered

    def recorded_items(self) -> list[_reach.RecordedCall]:
        """The recorded calls no discovered target claimed (after `discover`), of the modules this run checks
        (other modules' rules were not asked for), one per recorded target in its name's order."""
        out = []
        for call in self.recorded.unclaimed():
            walked = _reach.walked_of(call, self.discovery.walked)
            if walked is not None:
                out.append(_reach.RecordedCall(call, walked))
        return out

    @staticmethod
    def _recorded_keys(found: Found) -> list[str]:
        return found.keys + [f"{found.walked.module.__name__}:{found.attr}"]

    # -- checking ----------------------------------------------------------------------------------------------

    def _check(self, found: Found | _reach.RecordedCall) -> list[TargetReport]:
        if isinstance(found, _reach.RecordedCall):
            _reach.pin_live([found])  # already done where the process started checking (`_parallel`)
            at = [found.location] if found.location else []
            try:
                reports = self._check_recorded(found.call, live=found.obj)
            except UsageError:
                raise
            except Exception as exc:  # jaxdiag's own bug on this recorded call: report it (exit 3), check the others
                if os.environ.get("JAXDIAG_DEBUG"):
                    raise
                reports = [_internal_error(found, exc, module=found.walked.label, config_keys=list(found.keys),
                                           anchors=at)]
            if any(tr.internal_errors for tr in reports):  # its suppressions cannot be judged unused
                self._mark_unchecked(found, at)
            return reports
        args, params, origin = self._inputs_for(found)
        if origin == _VIA:
            return self._check_recorded(params, found)
        target = Target(ref=found.label, obj=found.obj, kind=found.kind, module=found.walked.module)
        held_at = _reach.holder_location(found)  # a wrapper's `foo_p = Kernel(...)` line names this object
        anchors = list(dict.fromkeys(([held_at] if held_at else []) + _anchors.suppression_anchors(target)))
        try:
            report = self._run(found, target, args, params, origin)
        except _engine.MissingDependencyError as exc:
            report = Report([TargetReport(found.label, found.kind, checks=[CheckResult(
                "infer-inputs", "skipped", 0.0, "optional dependency missing")], findings=[
                rules.DEPENDENCY_MISSING.finding(error=exc.last_error, dependency=exc.dependency, what=found.label,
                                                 location=anchors[0] if anchors else None)],
                module=found.walked.label)])
            self._mark_unchecked(found, anchors)
        except InferenceError as exc:
            report = Report([self._not_inferred(found, exc, anchors, getattr(exc, "call_sites", ()))])
            self._mark_unchecked(found, anchors)
        except UsageError as exc:
            raise UsageError(f"{found.label}{origin}: {exc}") from None
        except Exception as exc:  # jaxdiag's own bug on this target: report it (exit 3), check the others
            if os.environ.get("JAXDIAG_DEBUG"):
                raise
            report = Report([_internal_error(found, exc)])
            self._mark_unchecked(found, anchors)
        if origin.startswith(" (recorded") and report.targets:
            report.targets[0].findings.insert(0, rules.INPUTS_RECORDED.finding(
                how=f"checked on the call recorded{origin[len(' (recorded'):-1]}",
                inputs=" ".join(report.targets[0].inputs),
                params=(" with " + ", ".join(f"{k}={v!r}" for k, v in sorted(params.items()))) if params else "",
                location=anchors[0] if anchors else None))
        if found.kind == "primitive" and _reach.jax_owned(found.obj) and report.targets:
            _reach.restrict_to_user_rules(report.targets[0], found.obj)
        _reach.move_to_holder(report.targets, found)
        for tr in report.targets:
            tr.module = found.walked.label
            tr.config_keys = list(found.keys)
            tr.anchors = _anchors.with_own_anchors(anchors, tr)
            if tr.internal_errors:
                self._mark_unchecked(found, anchors)
        return report.targets

    def _run(self, found: Found, target: Target, args: list[Any], params: Any, origin: str) -> Report:
        """The target's report on its given inputs; with none given, at a call its own package makes when that call
        passes what inference would not draw (matrices, integers), else on inferred inputs, else (nothing drawn
        runs it, or its bind params are built at run time) at any call its package makes."""
        if not origin:
            reach = _call_sites.check_at_call_sites(self, found, only_if_differs=True)
            if reach.reports:
                return Report(reach.reports)
        provenance = "recorded" if origin.startswith(" (recorded") else "declared"  # none given: inferred
        options = Options(command="check", seed=self.seed, provenance=provenance, **self.run_options)
        try:
            return _engine.run_unfiltered(target, args, params, options, app_dir=self.app_dir)
        except _engine.MissingDependencyError:
            raise
        except InferenceError as exc:
            if origin:
                raise
            reach = _call_sites.check_at_call_sites(self, found, only_if_differs=False)
            if reach.reports:
                return Report(reach.reports)
            if reach.params and not params:  # the bind params its package passes, its operands chosen by it
                try:
                    return _engine.run_unfiltered(target, args, reach.params, options, app_dir=self.app_dir)
                except InferenceError:
                    pass
            exc.call_sites = reach.tried  # said in the JXN012 note
            raise

    def _inputs_for(self, found: Found) -> tuple[list[Any], Any, str]:
        """(args, params, where they came from) from pyproject, else recorded calls, else the module's JAXDIAG
        dict, else none. Recorded calls that cannot be replayed give (`[]`, the call, _VIA)."""
        for key in found.keys:
            entry = self.config.target(key)
            if entry is not None:
                return list(entry.args), _hashable(entry.params), f" ([tool.jaxdiag.targets.\"{key}\"])"
        calls = self.recorded.for_keys(self._recorded_keys(found), found.obj, found.kind)
        # a call of the custom function a wrapper object holds has the inner function's arguments, not the
        # wrapper's: replayed only through the function that carried it
        replayable = [c for c in calls if c.get("replayable", True) and c.get("kind", found.kind) == found.kind]
        if replayable:
            templates, params = _reach.templates_of(replayable[0])
            return templates, params, f" (recorded in {_locate.relative_path(self.recorded.path or '')})"
        if calls:  # only calls with a callable/treedef argument or param: checked inside the function that made it
            return [], next((c for c in calls if c.get("via")), calls[0]), _VIA
        table = getattr(found.walked.module, "JAXDIAG", None)
        if table is None:
            return [], {}, ""
        where = f" (JAXDIAG in {found.walked.label})"
        if not isinstance(table, dict):
            raise UsageError(f"{found.walked.label}: JAXDIAG must be a dict mapping attribute names to "
                             "{'args': [SPEC, ...], 'params': {...}}")
        names = [n for n, v in vars(found.walked.module).items() if v is found.obj or _unjit(v) is found.obj]
        for name in [found.attr] + names:
            entry = table.get(name)
            if entry is None:
                continue
            given_args, given_params = (entry.get("args", []), entry.get("params", {})) if isinstance(
                entry, dict) else (None, None)
            if not isinstance(given_args, (list, tuple)) or not all(isinstance(a, str) for a in given_args) or \
                    not isinstance(given_params, dict) or not set(entry) <= {"args", "params", "platforms"}:
                raise UsageError(f"{found.walked.label}: JAXDIAG[{name!r}] must be {{'args': [SPEC, ...], "
                                 "'params': {...}}} with SPEC strings such as 'f32[3]'")
            return list(given_args), _hashable(given_params), where
        return [], {}, ""

    def _not_inferred(self, found: Found, exc: InferenceError, anchors: list[Location],
                      call_sites: Sequence[str] = ()) -> TargetReport:
        key = self.discovery.config_key(found)
        static = getattr(exc, "static", {})  # a static position takes a Python literal, never an array SPEC
        args = ", ".join(json.dumps(static[i]) if i in static else '"f32[3]"' for i in range(max(exc.arity, 1)))
        snippet = f"[tool.jaxdiag.targets.\"{key}\"]\nargs = [{args}]"
        missing = list(getattr(exc, "missing", [])) or (required_params(found.obj) if found.kind == "primitive" else [])
        jaxdiag_dict = f"\"args\": [{args}]"
        if missing:
            snippet += "\nparams = {" + ", ".join(f"{m} = …" for m in missing) + "}"
            jaxdiag_dict += ", \"params\": {" + ", ".join(f"\"{m}\": …" for m in missing) + "}"
        location = anchors[0] if anchors else None
        if exc.tried:
            finding = rules.INPUTS_NOT_INFERRED.finding(
                target=found.label, tried="; ".join(exc.tried[:6]), error=exc.last_error,
                params_hint=", and its bind params" if missing else "", snippet=snippet,
                jaxdiag_dict=f"JAXDIAG = {{\"{found.attr}\": {{{jaxdiag_dict}}}}}", module=found.walked.label,
                location=location)
        else:  # a precise reason (bind params, static arguments, keyword-only arguments): say it as it is
            tried = f" (no call of the package's own reaches it: {'; '.join(call_sites)})" if call_sites else ""
            finding = rules.TARGET_NOT_CHECKABLE.finding(
                reason=str(exc) + tried, fix=f"Add its inputs to pyproject.toml (a SPEC per positional argument, a "
                f"literal such as 0.1 for a static one{', and its bind params' if missing else ''}):\n{snippet}\nor "
                f"define JAXDIAG = {{\"{found.attr}\": {{{jaxdiag_dict}}}}} in {found.walked.label}, or record the "
                "calls your own tests make: jaxdiag record -- pytest", location=location)
        skipped = [rules.CHECK_SKIPPED.finding(reason=exc.skipped, check="infer-inputs", location=location)
                   ] if getattr(exc, "skipped", "") else []
        return TargetReport(found.label, found.kind, checks=[CheckResult(
            "infer-inputs", "skipped", 0.0, "could not infer example inputs")], findings=[finding, *skipped],
            module=found.walked.label)

    def _check_recorded(self, call: dict, found: Found | None = None, live: Any = None) -> list[TargetReport]:
        return _reach.check_recorded(self, call, found, live)

    def _mark_unchecked(self, found: Found | _reach.RecordedCall, anchors: list[Location]) -> None:
        """Lines whose suppressions cannot be judged because this target was not (fully) checked."""
        for loc in [*anchors, *_rule_locations(found)]:
            self.unchecked_lines.add((os.path.abspath(loc.path), loc.line))

    # -- notes about the run ------------------------------------------------------------------------------------

    def _run_notes(self, report_stale_keys: bool) -> list[TargetReport]:
        """Unused inline suppressions per module, then the configuration's: unused per-target ignores and
        deprecated codes."""
        reports = []
        for walked in self.discovery.walked:
            where = getattr(walked.module, "__file__", None)
            if not where or not where.endswith(".py"):
                continue
            findings = unused_inline(where, self.filter.used_inline, self.unchecked_lines)
            if findings:
                reports.append(TargetReport(walked.label, "module", findings=findings, module=walked.label))
        source = self.config.source or "pyproject.toml"
        label = _posix(_locate.relative_path(source))
        # SARIF and GitHub annotations need a place: deprecated codes are pointed at the configuration file
        where = Location(label, 1, "[tool.jaxdiag]") if self.config.source else None
        config_findings = self.filter.unused_config(source, report_stale_keys) + self.filter.deprecation_notes(where)
        if config_findings:
            reports.append(TargetReport(label, "config", findings=config_findings, module=label))
        return reports


_VIA = " (via)"


def _hashable(value: Any) -> Any:
    """TOML arrays become tuples: JAX hashes bind params (jit caches on them)."""
    if isinstance(value, dict):
        return {k: _hashable(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _internal_error(found: Found | _reach.RecordedCall, exc: Exception, **fields: Any) -> TargetReport:
    return internal_report(found, f"internal error: {type(exc).__name__}: {exc}", **fields)


def _rule_locations(found: Found | _reach.RecordedCall) -> list[Location]:
    if found.obj is None:  # a recorded call with no live object: its anchor (`defined_at`) is all there is
        return []
    if found.kind == "primitive":
        fns = list(_compat.registered_rules(found.obj).values())
    else:
        fns = [getattr(found.obj, name, None) for name in ("fun", "fwd", "bwd", "jvp", "vmap_rule")]
    locs = [_locate.locate(fn) for fn in fns if fn is not None and callable(fn)]
    return [loc for loc in locs if loc is not None]


