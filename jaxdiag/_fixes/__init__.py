"""Verified fixes (`--diff`, `--fix`): candidate source edits read off each finding's evidence, applied to an
in-memory copy of the user's module, kept only when re-running the checks on that copy shows the finding gone and
nothing new wrong. Unverified fixes stay text (`Finding.fix_verified` False).

`_edits` holds the model (SourceEdit, Fix), patching and diffs; `_candidates` turns a finding into edits; `_verify`
loads the edited module and re-runs the checks.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from typing import Any

from .._core._report import Report
from ._candidates import candidate_fixes
from ._edits import Fix, SourceEdit, apply_edits, combined_diff, unified_diff, write_fixes
from ._verify import edited_module, module_file, verify_findings

__all__ = ["Fix", "SourceEdit", "apply_edits", "attach", "candidate_fixes", "combined_diff", "fixed_sources",
           "unified_diff", "verified_fixes", "write_fixes"]


def attach(report: Report, target: Any, args: Sequence[Any], params: dict[str, Any], options: Any,
           app_dir: str, run_unfiltered: Callable[..., Report]) -> list[Fix]:
    """Verify the candidate fixes of `report` (a run of `target`) by re-running it on edited copies of the target's
    module; attach diffs to the findings. Returns the verified fixes (stored on the report for `--fix`)."""
    from .._loading._targets import Target, classify

    path = module_file(target.module)
    if path is None:
        return []
    attr = _attribute_name(target)
    if attr is None:
        return []
    quiet = dataclasses.replace(options, fixes=False, show_jaxpr=False)

    def rerun(sources: dict[str, str]) -> Report | None:
        if set(sources) != {path}:
            return None
        with edited_module(path, sources[path], target.module) as module:
            obj: Any = module
            for part in attr.split("."):
                obj = getattr(obj, part)
            kind, checked = classify(obj)
            return run_unfiltered(Target(ref=target.ref, obj=checked, kind=kind, module=module), args, params,
                                  quiet, app_dir)

    return verify_findings(report, rerun, candidate_fixes, lambda p: os.path.realpath(p) == path, repro_passes)


def repro_passes(finding: Any, target_report: Any, sources: dict[str, str]) -> str | None:
    """None when the finding's plain-JAX repro script (`_repro`) passes on a scratch copy of the edited module, or
    when the finding has no plain-JAX form (the re-run checks alone decide); else the script's last error line."""
    from .._evidence import _repro

    subject = getattr(target_report, "subject", None)
    text = _repro.script(target_report, subject, finding) if subject is not None else None
    if text is None:
        return None
    module = os.path.realpath(_repro.module_path(text) or "")
    edited = {os.path.realpath(p): s for p, s in sources.items()}
    if module not in edited:
        return None
    return _repro.passes_on(text, module, edited[module])


def fixed_sources(finding: Any) -> dict[str, str] | None:
    """{path: the file's text with the finding's verified fix applied}, or None when it has none (for `_repro`)."""
    from ._edits import read_source

    fix = finding.verified_fix
    if fix is None:
        return None
    return {path: apply_edits(read_source(path), [e for e in fix.edits if e.path == path]) for path in fix.paths}


def verified_fixes(report: Report) -> list[Fix]:
    """The verified fix of every finding that has one, in report order."""
    found = (f.verified_fix for f in report.findings)
    return [fix for fix in found if fix is not None]


def _attribute_name(target: Any) -> str | None:
    """The attribute path of the target in its module: from `mod:attr`, else by identity."""
    ref = target.ref
    if ":" in ref:
        attr = ref.rpartition(":")[2]
        obj: Any = target.module
        try:
            for part in attr.split("."):
                obj = getattr(obj, part)
            return attr
        except AttributeError:
            pass
    for name, value in vars(target.module).items():
        if value is target.obj or getattr(value, "__wrapped__", None) is target.obj:
            return name
    return None
