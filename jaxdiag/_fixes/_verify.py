"""Verifying a candidate fix: apply it to an in-memory copy of the user's module, load that copy as a fresh module
under a temporary name, re-resolve the target in it, re-run the same checks with the same inputs, and accept the
fix only if the finding is gone and nothing new went wrong. The files on disk are never touched here, and the rule
registries, `sys.modules` and `linecache` are restored afterwards."""

from __future__ import annotations

import contextlib
import itertools
import linecache
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from .. import _compat
from .._core._report import Finding, Report
from ._edits import Fix, apply_edits, read_source

_counter = itertools.count()

# (edited sources by absolute path) -> the report of the same run on the edited module, or None if it cannot run
Rerun = Callable[[dict[str, str]], "Report | None"]
# (finding, its target's report, edited sources) -> None when the finding's plain-JAX repro passes on the edited
# copy (or the finding has no plain-JAX form), else what the repro still shows
ReproCheck = Callable[[Finding, Any, dict[str, str]], "str | None"]


@contextlib.contextmanager
def edited_module(path: str, source: str, original: types.ModuleType | None = None
                  ) -> Iterator[types.ModuleType]:
    """`source` executed as a new module (file name `path`, so the user's tracebacks and locations still name
    their file; the original's package, so its relative imports work); `linecache` serves the edited text for
    `path` meanwhile, so source-reading code sees the edit."""
    name = f"_jaxdiag_fix_{next(_counter)}_{os.path.splitext(os.path.basename(path))[0]}"
    module = types.ModuleType(name)
    module.__file__ = path
    module.__package__ = getattr(original, "__package__", None) or ""
    saved_cache = linecache.cache.get(path)
    lines = source.splitlines(keepends=True)
    linecache.cache[path] = (len(source), None, lines, path)  # mtime None: checkcache keeps it
    snapshot = _compat.snapshot_jax_state()
    keys = _compat.registration_keys()
    sys.modules[name] = module
    try:
        exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 - the user's own module, edited
        yield module
    finally:
        sys.modules.pop(name, None)
        _compat.restore_jax_state(snapshot)
        _compat.drop_registrations_since(keys)
        if saved_cache is None:
            linecache.cache.pop(path, None)
        else:
            linecache.cache[path] = saved_cache


def problems(report: Report) -> set[tuple[str, str]]:
    """(target label, code) of every error and warning."""
    return {(t.target, f.code) for t in report.targets for f in t.findings if f.severity in ("error", "warning")}


def verify(fix: Fix, finding: Finding, label: str, baseline: Report, rerun: Rerun,
           repro: Callable[[dict[str, str]], str | None] | None = None) -> bool:
    """True when the edited code no longer shows `finding` (same code, same target), shows no error or warning
    that the original did not, and (given `repro`) the finding's plain-JAX repro passes on the edited copy."""
    sources: dict[str, str] = {}
    for path in fix.paths:
        sources[path] = apply_edits(read_source(path), [e for e in fix.edits if e.path == path])
    from .._harness import call_user

    result = call_user(rerun, sources, quiet=True)
    if result.error is not None:  # the edited module does not even import: not a fix
        fix.notes.append(f"the edited module failed: {type(result.error).__name__}: {result.error}")
        return False
    after = result.value
    if after is None or after.internal_errors:
        return False
    now = problems(after)
    if (label, finding.code) in now or not now <= problems(baseline):
        return False
    still = repro(sources) if repro is not None else None
    if still is not None:  # jaxdiag's checks pass the edit, but plain JAX still shows the defect: not a fix
        fix.notes.append(f"the plain-JAX repro still fails on the edited copy: {still}")
        return False
    return True


def verify_findings(report: Report, rerun: Rerun, candidates: Callable[[Finding], list[Fix]],
                    editable: Callable[[str], bool], repro: ReproCheck | None = None) -> list[Fix]:
    """Try each error/warning's candidate fixes in order; attach the first verified one to the finding
    (`finding.diff`, `finding.fix_verified`) and return the verified fixes. With `repro`, a candidate is verified
    only when the finding's plain-JAX repro also passes on the edited copy."""
    from ._edits import combined_diff

    verified: list[Fix] = []
    tried: dict[tuple, bool] = {}
    for target in report.targets:
        for finding in target.findings:
            if finding.severity not in ("error", "warning"):
                continue
            fixes = [f for f in candidates(finding) if all(editable(p) for p in f.paths)]
            if not fixes:
                continue
            finding.fix_verified = False
            for fix in fixes:
                key = (fix.edits, target.target, finding.code)
                if key not in tried:
                    check = None if repro is None else (
                        lambda sources, finding=finding, target=target: repro(finding, target, sources))
                    tried[key] = verify(fix, finding, target.target, report, rerun, check)
                if tried[key]:
                    fix.verified = True
                    finding.fix_verified = True
                    finding.diff = combined_diff([fix])
                    finding.verified_fix = fix  # for --fix; not serialized
                    verified.append(fix)
                    break
    return verified


def module_file(module: Any) -> str | None:
    path = getattr(module, "__file__", None)
    return os.path.realpath(path) if path else None
