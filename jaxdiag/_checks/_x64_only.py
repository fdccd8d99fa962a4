"""Errors that show only under x64.

Only an explicitly 64-bit spec (f64, i64, u64, c128) turns `jax_enable_x64` on, for its run. A batching or
differentiation error found there may be a defect of the 64-bit path alone (a hard-coded float32 in a rule): real
for the users who enable x64, invisible to everyone else. The engine checks such a target a second time on the
32-bit version of its specs with x64 off; an error whose check passes there is reported as the x64-only variant
(JXB015 / JXG026, warnings), carrying the original code, evidence and fix. Registration, custom_vmap and sharding
errors keep their rule: their checks do not depend on the dtypes the user's rules compute in.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from .. import _rules as rules
from .._loading._inputs import ArgSpec, Static, template_text
from .._core._report import Finding, TargetReport

if TYPE_CHECKING:
    from .._rules import _fields

# The 32-bit counterpart of each 64-bit dtype (complex128 holds two float64s, complex64 two float32s).
_NARROW = {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.int64): np.dtype(np.int32),
           np.dtype(np.uint64): np.dtype(np.uint32), np.dtype(np.complex128): np.dtype(np.complex64)}
_VARIANTS = {"JXB": rules.X64_ONLY_BATCHING, "JXG": rules.X64_ONLY_DIFFERENTIATION}


def narrow_templates(templates: Sequence[Any]) -> list[Any]:
    """The templates with every 64-bit dtype replaced by its 32-bit counterpart (pytrees and statics kept)."""

    def narrow(leaf: Any) -> Any:
        if isinstance(leaf, ArgSpec) and leaf.dtype in _NARROW:
            return dataclasses.replace(leaf, dtype=_NARROW[leaf.dtype])
        return leaf

    return [jax.tree_util.tree_map(narrow, t, is_leaf=lambda x: isinstance(x, (ArgSpec, Static)))
            for t in templates]


def has_variant_errors(reports: Sequence[TargetReport]) -> bool:
    """Whether any report has an error an x64-only variant could stand for (worth a 32-bit re-run)."""
    return any(f.severity == "error" and f.code[:3] in _VARIANTS for r in reports for f in r.findings)


def mark_x64_only(wide: Sequence[TargetReport], narrow: Sequence[TargetReport], wide_templates: Sequence[Any],
                  narrow_spec_templates: Sequence[Any]) -> None:
    """Replace, in `wide` (the run under x64), each JXB/JXG error whose check passed in `narrow` (the same target on
    32-bit specs with x64 off) by its x64-only variant. A target or check the 32-bit run did not reach keeps its
    error: without that comparison the defect is not shown to be x64-only."""
    passed = {(r.target, c.name) for r in narrow for c in r.checks if c.status == "passed"}
    wide_text = " ".join(template_text(t) for t in wide_templates)
    narrow_text = " ".join(template_text(t) for t in narrow_spec_templates)
    for report in wide:
        failed = [c for c in report.checks if c.status == "failed"]
        out = []
        for f in report.findings:
            variant = _VARIANTS.get(f.code[:3]) if f.severity == "error" else None
            checks = [c.name for c in failed if f.code in c.detail.split("; ")]
            if variant is not None and checks and all((report.target, name) in passed for name in checks):
                f = _variant(variant, f, wide_text, narrow_text)
            out.append(f)
        report.findings = out


def _variant(variant: rules.Rule[_fields.EvidenceFixNarrowOriginalWide], f: Finding, wide: str, narrow: str
             ) -> Finding:
    new = variant.finding(wide=wide, narrow=narrow, original=f"{f.code} {f.name}:", evidence=f.message, fix=f.fix,
                          location=f.location)
    return dataclasses.replace(new, diff=f.diff, jaxpr=f.jaxpr, fix_verified=f.fix_verified)
