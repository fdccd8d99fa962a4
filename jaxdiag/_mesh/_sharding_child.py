"""The child process of `jaxdiag sharding`: runs the sharding checks on virtual CPU devices.

XLA reads `--xla_force_host_platform_device_count` once, when JAX initialises its CPU backend, so the parent
(`jaxdiag._mesh._sharding`) starts this module with that flag appended to `XLA_FLAGS` in the child's environment only.
The request arrives pickled on stdin (targets, inputs, options); the report goes, as the JSON of the stable schema,
to the file the request names (stdout stays the user's: their code may print). While it runs, the child keeps the
status file up to date (which target and check are running, since when) and appends each finished target's report
to the results file, so the parent can stop it at the per-target time limit and keep what was finished.

    python -m jaxdiag._mesh._sharding_child < request.pickle
"""

from __future__ import annotations

import json
import os
import pickle
import sys
import time
import traceback
from dataclasses import asdict
from typing import Any

EXIT_OK, EXIT_USAGE, EXIT_INTERNAL = 0, 2, 3


def main() -> int:
    request = pickle.load(sys.stdin.buffer)
    for path in reversed(request.get("sys_path", [])):
        if path not in sys.path:
            sys.path.insert(0, path)
    out_path = request["out_path"]
    payload: dict[str, Any]
    try:
        payload = {"report": run_request(request)}
        code = EXIT_OK
    except Exception as exc:
        from .._core._errors import UsageError

        if isinstance(exc, UsageError):
            payload, code = {"usage_error": str(exc), "error_type": type(exc).__name__}, EXIT_USAGE
        else:
            payload = {"internal_error": f"{type(exc).__name__}: {exc}",
                       "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]}
            code = EXIT_INTERNAL
    with open(out_path, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)
    return code


def run_request(request: dict[str, Any]) -> dict[str, Any]:
    import jax

    from .. import __version__
    from .._checks._sharding import ShardingOptions
    from .._compat import _sharding as cs
    from .._core._errors import UsageError
    from .._core._report import Report

    mesh = tuple(request["mesh"])
    needed = 1
    for n in mesh:
        needed *= n
    if cs.device_count() < needed:
        raise RuntimeError(f"the child process has {cs.device_count()} CPU devices, {needed} needed for mesh "
                           f"{mesh} (XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r})")
    options = ShardingOptions(seed=request.get("seed", 0), include_jax=request.get("include_jax", False),
                              mesh=mesh, max_placements=request.get("max_placements", 12))
    status = Status(request.get("status_path"))
    reports = []
    for index, entry in enumerate(request["targets"]):
        status.target(index, entry.get("label") or entry["ref"])
        try:
            found = run_target(entry, options, request, status)
        except UsageError:
            if request.get("strict", True):
                raise
            found = [_note_report(entry, sys.exc_info()[1])]
        reports.extend(found)
        _append_line(request.get("partial_path"), {"entry": index, "targets": _target_dicts(found)})
    report = Report(reports, jaxdiag_version=__version__, jax_version=jax.__version__)
    data = report.to_dict()
    data["targets"] = _target_dicts(reports)
    return data


def _target_dicts(reports: list[Any]) -> list[dict[str, Any]]:
    """Schema-1 target entries plus what the parent's filtering needs (anchors, config keys)."""
    out = []
    for target in reports:
        entry = target.to_dict()
        entry["anchors"] = [asdict(a) for a in target.anchors]
        entry["config_keys"] = list(target.config_keys)
        out.append(entry)
    return out


def _append_line(path: str | None, item: dict[str, Any]) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(item) + "\n")


class Status:
    """What the child is doing, for the parent's time limit: the target (its index in the request, its label, its
    suppression anchors), the check and subject, and when the target started (time.time(): the parent compares it
    with its own clock). Replaced atomically, so the parent never reads half a file."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.state: dict[str, Any] = {}

    def target(self, index: int, label: str) -> None:
        self.state = {"entry": index, "label": label, "check": "", "subject": "", "target_started": time.time()}
        self._write()

    def anchors(self, anchors: list[Any]) -> None:
        self.state["anchors"] = [asdict(a) for a in anchors]
        self._write()

    def location(self, location: Any) -> None:
        """Where the target is defined: the JXU004 result points there."""
        self.state["location"] = asdict(location) if location is not None else None
        self._write()

    def check(self, subject: str, name: str) -> None:
        self.state.update(subject=subject, check=name, phase="")
        self._write()

    def phase(self, text: str) -> None:
        """A step before the checks, named for the note the parent writes if the target is stopped in it."""
        self.state.update(check="", phase=text)
        self._write()

    def _write(self) -> None:
        if not self.path:
            return
        partial = f"{self.path}.tmp"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(self.state, handle)
        os.replace(partial, self.path)


def _note_report(entry: dict, exc: Any) -> Any:
    from .. import _rules as rules
    from .._core._report import TargetReport

    return TargetReport(entry.get("label") or entry["ref"], "function", findings=[rules.CHECK_SKIPPED.finding(
        reason=f"sharding checks not run: {exc}", check="sharding")])


def run_target(entry: dict[str, Any], options: Any, request: dict[str, Any], status: Status | None = None
               ) -> list[Any]:
    """The reports of one target and the custom_partitioning calls and user primitives found inside it. Its inputs
    are read as every command reads them (`_signature.templates_of_args`): SPEC strings, static literals, `key[]`,
    pytrees, `@domain`, or concrete arrays; without any, the configuration's, else inferred."""
    import contextlib

    import numpy as np

    from .. import _compat
    from .._run import _anchors, _engine, _signature
    from .._harness.cache import SubjectCache
    from .._checks._sharding import subject_for_partitioned_call
    from .._compat import _sharding as cs
    from .._loading._inputs import ArgSpec, draw, template_leaves

    status = status or Status(None)
    app_dir = request.get("app_dir", ".")
    resolved = _engine.resolve(entry["ref"], app_dir)
    anchors = _anchors.suppression_anchors(resolved)
    status.anchors(anchors)
    args = list(entry.get("args", []))
    params = dict(entry.get("params", {}))
    if not args:
        args, configured_params = configured_inputs(entry["ref"], resolved, app_dir)
        params = params or configured_params
    templates, concrete = _signature.templates_of_args(args)
    wide = any(_engine.needs_x64(leaf) for t in templates for leaf in template_leaves(t) if isinstance(leaf, ArgSpec))
    x64 = _compat.x64_scope(True) if wide and not _compat.x64_enabled() else contextlib.nullcontext()
    with x64:
        root = _engine._root_subject(resolved, params)
        if entry.get("label"):
            root.label = entry["label"]
        if cs.is_custom_partitioning(root.obj):
            root = subject_for_partitioned_call(root, root.obj, [], {}, is_root=True)
        status.location(anchors[0] if anchors else root.location)
        notes: list = []
        _signature.check_params(root)
        if templates:
            _signature.check_arity(root, templates)
        else:
            status.phase("inferring its inputs (calls on candidate shapes; no check had started)")
            templates = _engine.infer_templates(root, notes)
        _signature.apply(root, templates)  # statics and pytree structure stay out of root.specs
        status.phase("a first call on drawn inputs (choosing their value domain; no check had started)")
        _engine.choose_domain(root, notes)
        cache = SubjectCache()
        if any(c is not None for c in concrete):
            rng = np.random.default_rng(options.seed)
            cache.example = [np.asarray(c) if c is not None else draw(s, rng, root.domain)
                             for c, s in zip(concrete, root.specs)]
        status.phase("jax.make_jaxpr of the target (to find the custom_partitioning calls and user primitives "
                     "inside it; no check had started)")
        subjects = [root] + nested_subjects(root, options, cache)
        reports = []
        for subject in subjects:
            report = run_subject(subject, options, cache if subject is root else SubjectCache(), status)
            if subject is root:
                report.findings[:0] = notes
            reports.append(report)
    # Unfiltered: the parent filters once, like every command (it needs the lines where an inline suppression
    # covers the target, and the names configuration may use for it).
    for report in reports:
        report.findings.sort(key=lambda f: f.sort_key())
        report.anchors = list(anchors)
        report.config_keys = list(entry.get("config_keys") or [entry["ref"]])
        if entry.get("module"):
            report.module = entry["module"]
    return reports


def configured_inputs(ref: str, resolved: Any, app_dir: str) -> tuple[list[str], dict[str, Any]]:
    """Example inputs when no --arg is given, as `jaxdiag check` finds them: `[tool.jaxdiag.targets."REF"]` in
    pyproject.toml, else the module's `JAXDIAG` dict; ([], {}) when neither names the target (inference then)."""
    from .._core import _config

    entry = _config.load(app_dir).target(ref)
    if entry is not None:
        return list(entry.args), dict(entry.params)
    table = getattr(resolved.module, "JAXDIAG", None)
    attr = ref.rpartition(":")[2]
    found = table.get(attr) if isinstance(table, dict) else None
    if isinstance(found, dict) and all(isinstance(a, str) for a in found.get("args", [])):
        return list(found.get("args", [])), dict(found.get("params", {}))
    return [], {}


def nested_subjects(root: Any, options: Any, cache: Any) -> list[Any]:
    """custom_partitioning calls and user primitives inside a function (each checked on its own operands)."""
    import jax

    from .._run._nested import find_nested_subjects, spec_of_aval
    from .._checks._sharding import subject_for_partitioned_call
    from .._compat import _sharding as cs

    from .._harness.boundary import call_user, jaxdiag_code
    from .._harness.cache import SubjectCache

    if root.kind != "function":
        return []
    seen: list = []
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in root.specs]
    with cs.record_partitioned_calls(seen, jaxdiag_code), jax.disable_jit():
        if call_user(jax.make_jaxpr(root.call), *shapes).error is not None:
            seen = []
    subjects = []
    ids: set[int] = set()
    for obj, args, kwargs in seen:
        if id(obj) in ids or kwargs:
            continue
        ids.add(id(obj))
        specs = [spec_of_aval(getattr(a, "aval", a)) if hasattr(a, "shape") or hasattr(a, "aval") else None
                 for a in args]  # a custom_partitioning call is reproduced from array arguments only
        if all(s is not None for s in specs):
            subjects.append(subject_for_partitioned_call(root, obj, [s for s in specs if s is not None], {}))
    cache.sharding.partitioned_calls = len(subjects)
    primitives = [s for s in find_nested_subjects(root, options, SubjectCache()) if s.kind == "primitive"]
    return subjects + primitives


def run_subject(subject: Any, options: Any, cache: Any, progress: Status | None = None) -> Any:
    from .. import _rules as rules
    from .._checks import _sharding, _sharding_gather, _sharding_map, _sharding_rules
    from .._checks._base import Context, SkipCheck
    from .._core._errors import internal_error_detail
    from .._core._report import CheckResult, TargetReport

    checks = [*_sharding.CHECKS, *_sharding_rules.CHECKS, *_sharding_map.CHECKS, *_sharding_gather.CHECKS]
    report = TargetReport(target=subject.label, kind=_report_kind(subject.kind),
                          inputs=[str(s) for s in subject.specs], module=subject.module)
    for chk in checks:
        if not chk.applies(subject, options) or not _wanted(chk.name, subject, cache):
            continue
        if progress is not None:
            progress.check(subject.label, chk.name)
        ctx = Context(subject, options, chk.name, cache)
        start = time.perf_counter()
        findings: list = []
        status, detail = "passed", ""
        try:
            findings = list(chk.run(ctx))
        except SkipCheck as skip:
            status, detail = "skipped", str(skip)
            if skip.note:
                findings = [rules.CHECK_SKIPPED.finding(reason=str(skip), check=chk.name,
                                                        location=skip.location or subject.location)]
        except Exception as exc:  # jaxdiag's own bug: reported with exit 3, the other checks go on
            status = "error"
            detail = internal_error_detail(chk.name, exc)
        if status == "passed" and any(f.severity in ("error", "warning") for f in findings):
            status, detail = "failed", "; ".join(sorted({f.code for f in findings}))
        report.checks.append(CheckResult(chk.name, status, time.perf_counter() - start, detail))
        report.findings.extend(findings)
    return report


def _report_kind(kind: str) -> str:
    # The JSON schema's kinds: a custom_partitioning op is a function to its users.
    return "function" if kind == "custom_partitioning" else kind


def _wanted(name: str, subject: Any, cache: Any) -> bool:
    """Avoid checking one thing twice: a function's custom_partitioning calls are checked at each call (where the
    finding can name the callback), a nested primitive only inside shard_map, gathering once, at the root."""
    if subject.parent is not None and subject.kind == "primitive":
        return name == "shard-map"
    return not (name == "sharded-results" and subject.kind == "function" and cache.sharding.partitioned_calls)


if __name__ == "__main__":
    sys.exit(main())
