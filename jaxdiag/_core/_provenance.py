"""Where the inputs that showed a finding came from, and the one place a finding is graded by it.

Every finding of a checked subject carries `inputs = {"provenance": ..., "specs": [...]}`:

- `declared`: given by the user (`--arg`, the Python API's arguments, `[tool.jaxdiag.targets]`, a `JAXDIAG` dict);
- `recorded`: a call recorded from the user's own program (`jaxdiag record`);
- `observed`: the values a function of the user's passed a nested rule, the function itself run on declared or
  recorded inputs;
- `inferred`: synthesised by jaxdiag (the shape ladder, random draws), also a nested rule reached through a function
  run on inferred inputs.

Only the first three can make an error. A finding whose evidence comes from inferred inputs is at most
`rules.INFERRED_MAX_SEVERITY` and says so (`rules.INFERRED_MESSAGE`): the code may never receive such inputs. So is
a finding of a rule marked `drawn_values_only` (the target itself raising) on a recorded call: the recording keeps
shapes and ranges, not values, and the program's own call ran (`rules.RECORDED_DRAWN_MESSAGE`).
Findings whose rule reads a fact off the object (`Rule.evidence_from_inputs` False: a rule never registered) keep
their severity. `grade` runs once, inside `_filtering.Filter.apply`, so every command grades the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .. import _rules as rules
from ._report import SEVERITY_ORDER, Finding, Report

PROVENANCES = ("declared", "recorded", "observed", "inferred")


def inputs_record(provenance: str, specs: Iterable[object]) -> dict[str, Any]:
    """The record of a finding's inputs (`Finding.inputs`), also what a worker tells its parent as a check starts."""
    assert provenance in PROVENANCES, provenance
    return {"provenance": provenance, "specs": [str(s) for s in specs]}


def stamp(findings: Iterable[Finding], provenance: str, specs: Sequence[str]) -> None:
    """Record the inputs behind findings that carry none yet (a nested rule's own stamp wins)."""
    for finding in findings:
        if finding.inputs is None:
            finding.inputs = inputs_record(provenance, specs)


def nested(root: str, observed: bool) -> str:
    """The provenance of a nested rule's inputs: observed at its call site when its function ran on inputs that
    were not inferred; a function run on inferred inputs passes its rules inferred inputs too."""
    if root == "inferred":
        return "inferred"
    return "observed" if observed else root


def grade(report: Report) -> None:
    """Cap the findings seen only on inferred inputs (idempotent: a graded message already names its inputs)."""
    cap = SEVERITY_ORDER[rules.INFERRED_MAX_SEVERITY]
    for target in report.targets:
        for finding in target.findings:
            inputs = finding.inputs
            provenance = inputs.get("provenance") if inputs else None
            rule = rules.RULES.get(finding.code)
            if rule is None or rule.is_note or not rule.evidence_from_inputs or not inputs:
                continue
            if provenance == "inferred":
                template = rules.INFERRED_MESSAGE
            elif provenance == "recorded" and rule.drawn_values_only:
                template = rules.RECORDED_DRAWN_MESSAGE
            else:
                continue
            specs = " ".join(inputs.get("specs") or []) or "no arguments"
            if finding.message.startswith(template.format(specs=specs, message="")):
                continue
            if SEVERITY_ORDER[finding.severity] < cap:
                finding.severity = rules.INFERRED_MAX_SEVERITY
            finding.message = template.format(specs=specs, message=finding.message)
            finding.fix = rules.INFERRED_FIX.format(fix=finding.fix).strip()
