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

__all__ = ["Fix", "SourceEdit", "apply_edits", "attach", "candidate_fixes", "combined_diff", "unified_diff",
           "verified_fixes", "write_fixes"]


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

    return verify_findings(report, rerun, candidate_fixes, lambda p: os.path.realpath(p) == path)


def verified_fixes(report: Report) -> list[Fix]:
    """The verified fix of every finding that has one, in report order."""
    found = (getattr(f, "verified_fix", None) for f in report.findings)
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
