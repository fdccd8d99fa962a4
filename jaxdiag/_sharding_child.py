"""The child process of `jaxdiag sharding`: runs the sharding checks on virtual CPU devices.

XLA reads `--xla_force_host_platform_device_count` once, when JAX initialises its CPU backend, so the parent
(`jaxdiag._sharding`) starts this module with that flag appended to `XLA_FLAGS` in the child's environment only.
The request arrives pickled on stdin (targets, inputs, options); the report goes, as the JSON of the stable schema,
to the file the request names (stdout stays the user's: their code may print).

    python -m jaxdiag._sharding_child < request.pickle
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
        from ._errors import UsageError

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

    from . import __version__
    from ._checks._sharding import ShardingOptions
    from ._compat import _sharding as cs
    from ._errors import UsageError
    from ._report import Report

    mesh = tuple(request["mesh"])
    needed = 1
    for n in mesh:
        needed *= n
    if cs.device_count() < needed:
        raise RuntimeError(f"the child process has {cs.device_count()} CPU devices, {needed} needed for mesh "
                           f"{mesh} (XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r})")
    options = ShardingOptions(seed=request.get("seed", 0), include_jax=request.get("include_jax", False),
                              mesh=mesh, max_placements=request.get("max_placements", 12))
    reports = []
    for entry in request["targets"]:
        try:
            reports.extend(run_target(entry, options, request))
        except UsageError:
            if request.get("strict", True):
                raise
            reports.append(_note_report(entry, sys.exc_info()[1]))
    report = Report(reports, jaxdiag_version=__version__, jax_version=jax.__version__)
    data = report.to_dict()
    for target, entry in zip(report.targets, data["targets"]):  # what the parent's filtering needs
        entry["anchors"] = [asdict(a) for a in target.anchors]
        entry["config_keys"] = list(target.config_keys)
    return data


def _note_report(entry: dict, exc: Any) -> Any:
    from . import _rules as rules
    from ._report import TargetReport

    return TargetReport(entry.get("label") or entry["ref"], "function", findings=[rules.CHECK_SKIPPED.finding(
        reason=f"sharding checks not run: {exc}", check="sharding")])


def run_target(entry: dict[str, Any], options: Any, request: dict[str, Any]) -> list[Any]:
    import contextlib

    import numpy as np

    from . import _compat, _engine, _signature
    from ._checks._sharding import subject_for_partitioned_call
    from ._compat import _sharding as cs
    from ._inputs import ArgSpec, draw, parse_spec, spec_of

    from ._checks._harness.cache import SubjectCache

    app_dir = request.get("app_dir", ".")
    resolved = _engine.resolve(entry["ref"], app_dir)
    args = entry.get("args", [])
    params = dict(entry.get("params", {}))
    if not args:
        args, configured_params = configured_inputs(entry["ref"], resolved, app_dir)
        params = params or configured_params
    concrete = [None if isinstance(a, (str, ArgSpec)) else np.asarray(a) for a in args]
    specs: list[ArgSpec] = [a if isinstance(a, ArgSpec) else parse_spec(a) if isinstance(a, str) else spec_of(c)
                            for a, c in zip(args, concrete)]
    wide = any(s.dtype.itemsize >= 8 and s.dtype.kind in "fciu" for s in specs)
    x64 = _compat.x64_scope(True) if wide and not _compat.x64_enabled() else contextlib.nullcontext()
    with x64:
        root = _engine._root_subject(resolved, params)
        if entry.get("label"):
            root.label = entry["label"]
        if cs.is_custom_partitioning(root.obj):
            root = subject_for_partitioned_call(root, root.obj, [], {}, is_root=True)
        notes: list = []
        _signature.apply(root, specs or _engine.infer_templates(root, notes))  # statics stay out of root.specs
        _engine.choose_domain(root, notes)
        cache = SubjectCache()
        if any(c is not None for c in concrete):
            rng = np.random.default_rng(options.seed)
            cache.example = [c if c is not None else draw(s, rng, root.domain) for c, s in zip(concrete, specs)]
        subjects = [root] + nested_subjects(root, options, cache)
        reports = []
        for subject in subjects:
            report = run_subject(subject, options, cache if subject is root else SubjectCache())
            if subject is root:
                report.findings[:0] = notes
            reports.append(report)
    # Unfiltered: the parent filters once, like every command (it needs the lines where an inline suppression
    # covers the target, and the names configuration may use for it).
    anchors = _engine.suppression_anchors(resolved)
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
    from . import _config

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

    from . import _engine
    from ._checks._sharding import subject_for_partitioned_call
    from ._compat import _sharding as cs

    from ._checks._harness.boundary import call_user
    from ._checks._harness.cache import SubjectCache

    if root.kind != "function":
        return []
    seen: list = []
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in root.specs]
    with cs.record_partitioned_calls(seen), jax.disable_jit():
        if call_user(jax.make_jaxpr(root.call), *shapes).error is not None:
            seen = []
    subjects = []
    ids: set[int] = set()
    for obj, args, kwargs in seen:
        if id(obj) in ids or kwargs:
            continue
        ids.add(id(obj))
        specs = [_engine._spec_of_aval(getattr(a, "aval", a)) if hasattr(a, "shape") or hasattr(a, "aval") else None
                 for a in args]  # a custom_partitioning call is reproduced from array arguments only
        if all(s is not None for s in specs):
            subjects.append(subject_for_partitioned_call(root, obj, [s for s in specs if s is not None], {}))
    cache.sharding["partitioned_calls"] = len(subjects)
    primitives = [s for s in _engine.find_nested_subjects(root, options, SubjectCache()) if s.kind == "primitive"]
    return subjects + primitives


def run_subject(subject: Any, options: Any, cache: Any) -> Any:
    from . import _rules as rules
    from ._checks import _sharding, _sharding_gather, _sharding_rules
    from ._checks._base import Context, SkipCheck
    from ._report import CheckResult, TargetReport

    checks = [*_sharding.CHECKS, *_sharding_rules.CHECKS, *_sharding_gather.CHECKS]
    report = TargetReport(target=subject.label, kind=_report_kind(subject.kind),
                          inputs=[str(s) for s in subject.specs], module=subject.module)
    for chk in checks:
        if not chk.applies(subject, options) or not _wanted(chk.name, subject, cache):
            continue
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
            detail = f"internal error in check {chk.name}: {type(exc).__name__}: {exc}\n" + "".join(
                traceback.format_exception(type(exc), exc, exc.__traceback__)[-3:])
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
    return not (name == "sharded-results" and subject.kind == "function" and cache.sharding.get("partitioned_calls"))


if __name__ == "__main__":
    sys.exit(main())
