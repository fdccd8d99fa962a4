"""`--format sarif`: SARIF 2.1.0 for GitHub code scanning (`github/codeql-action/upload-sarif`).

One run; `tool.driver.rules` is the whole catalog (so GitHub can show the help of any rule), and each finding is
a result pointing at a repository-relative file and line. Only formats a `Report`: no JAX, no checks.
"""

from __future__ import annotations

import json
import os
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

from .. import __version__
from .. import _rules as rules
from .._core._report import Finding, Location, Report, TargetReport

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
INFORMATION_URI = "https://pypi.org/project/jaxdiag/"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def render(report: Report) -> str:
    catalog = rules.iter_rules()
    index = {r.code: i for i, r in enumerate(catalog)}
    results = [_result(target, finding, index) for target in report.targets for finding in target.findings]
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "jaxdiag",
            "version": report.jaxdiag_version or __version__,
            "semanticVersion": report.jaxdiag_version or __version__,
            "informationUri": INFORMATION_URI,
            "rules": [_rule(r) for r in catalog],
        }},
        "invocations": [_invocation(report)],
        "results": results,
        "properties": {"jaxVersion": report.jax_version, "summary": report.summary},
    }
    document = {"$schema": SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(document, indent=2) + "\n"


def _rule(rule: rules.Rule) -> dict[str, Any]:
    help_text = f"{rule.summary}\n\nWhat it does: {rule.what}\n\nWhy is this bad? {rule.why}"
    markdown = f"**{rule.code} {rule.name}**: {rule.summary}\n\n{rule.explanation}"
    for which, heading in (("bad", "Example"), ("good", "Use instead:")):
        text = rule.sample_text(which)
        if text:
            markdown += f"\n## {heading}\n```python\n{text.rstrip()}\n```\n"
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.what} {rule.why}"},
        "help": {"text": help_text, "markdown": markdown},
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"tags": ["jaxdiag", rule.category], "category": rule.category},
    }


def message_text(finding: Finding) -> str:
    """The message and, on a new line, the fix: what GitHub shows on the alert."""
    return f"{finding.message}\nFix: {finding.fix}" if finding.fix else finding.message


def _result(target: TargetReport, finding: Finding, index: dict[str, int]) -> dict[str, Any]:
    result: dict[str, Any] = {"ruleId": finding.code}
    if finding.code in index:
        result["ruleIndex"] = index[finding.code]
    result["level"] = LEVELS[finding.severity]
    result["message"] = {"text": message_text(finding)}
    if finding.location is not None:
        result["locations"] = [_location(finding.location, target.target)]
    result["properties"] = {"target": target.target, "kind": target.kind, "name": finding.name,
                            "severity": finding.severity}
    return result


def artifact_uri(path: str) -> str:
    """Repository-relative with forward slashes (GitHub resolves it from the checkout root); absolute → file URI."""
    posix = path.replace("\\", "/")
    if os.path.isabs(path) or PureWindowsPath(path).is_absolute():
        return "file://" + quote(("/" if not posix.startswith("/") else "") + posix, safe="/:")
    relative = str(PurePosixPath(posix))
    while relative.startswith("./"):
        relative = relative[2:]
    return quote(relative, safe="/")


def _location(location: Location, target: str) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": artifact_uri(location.path)},
            "region": {"startLine": max(1, int(location.line))},
        },
        "logicalLocations": [{"name": location.function or target, "fullyQualifiedName": target}],
    }


def _invocation(report: Report) -> dict[str, Any]:
    """Blocking problems (an import failure, jaxdiag's own internal error) are not rule results: they are
    tool execution notifications, and the execution is not successful."""
    notes = []
    for target in report.targets:
        for problem in target.all_problems():
            note: dict[str, Any] = {"level": "error", "message": {"text": f"{target.target}: {problem.kind}: "
                                                                          f"{problem.message}"},
                                    "descriptor": {"id": problem.kind}}
            if problem.location is not None:
                note["locations"] = [_location(problem.location, target.target)]
            notes.append(note)
    invocation: dict[str, Any] = {"executionSuccessful": not notes}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return invocation
