"""`--format junit`: JUnit XML for CI test-report viewers.

One `<testsuite>` per module, one `<testcase>` per target x check. A failed check carries a `<failure>` with its
findings; a check that crashed, or a module that failed to import, an `<error>`; a skipped one `<skipped>`.
Findings no check claims (notes such as inferred inputs, unused suppressions) go to a `<target> [findings]`
testcase: a failure when any is an error or warning, otherwise `<system-out>`. Only formats a `Report`: no JAX, no
checks.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

from .._core._report import Finding, Report, TargetReport

_INVALID_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    """XML 1.0 cannot carry control characters (ANSI escapes in a user's exception text); drop them."""
    return _INVALID_XML.sub("", text)


def finding_text(finding: Finding) -> str:
    where = f" at {finding.location.path}:{finding.location.line} in {finding.location.function}" \
        if finding.location else ""
    text = f"{finding.code} {finding.name} [{finding.severity}]{where}\n{finding.message}"
    return text + (f"\nfix: {finding.fix}" if finding.fix else "")


def _module_of(target: TargetReport) -> str:
    return target.module or target.target.split(":")[0]


def _case(suite: ET.Element, classname: str, name: str, seconds: float) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=_clean(classname), name=_clean(name), time=f"{seconds:.3f}")


def _fail(case: ET.Element, findings: list[Finding]) -> None:
    first = findings[0]
    headline = first.message.splitlines()[0] if first.message else ""
    more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
    failure = ET.SubElement(case, "failure", type=first.code,
                            message=_clean(f"{first.code} {first.name}: {headline}{more}"))
    failure.text = _clean("\n\n".join(finding_text(f) for f in findings))


def _notes(case: ET.Element, findings: Iterable[Finding]) -> None:
    out = ET.SubElement(case, "system-out")
    out.text = _clean("\n\n".join(finding_text(f) for f in findings))


def _target_cases(suite: ET.Element, target: TargetReport) -> None:
    classname = _module_of(target)
    claimed: set[int] = set()
    for check in target.checks:
        case = _case(suite, classname, f"{target.target} [{check.name}]", check.seconds)
        if check.status == "failed":
            codes = {c.strip() for c in check.detail.split(";")}
            mine = [i for i, f in enumerate(target.findings)
                    if f.code in codes and i not in claimed and f.severity != "info"]
            claimed.update(mine)
            if mine:  # empty when every finding of the check was suppressed: the testcase passes
                _fail(case, [target.findings[i] for i in mine])
        elif check.status == "error":
            error = ET.SubElement(case, "error", type="InternalError",
                                  message=_clean(check.detail.splitlines()[0] if check.detail else "internal error"))
            error.text = _clean(check.detail)
        elif check.status == "skipped":
            ET.SubElement(case, "skipped", message=_clean(check.detail))
    for problem in target.problems:  # an import failure: the module's testcase errors (never a filtered finding)
        case = _case(suite, classname, f"{target.target} [{problem.kind}]", 0.0)
        error = ET.SubElement(case, "error", type=problem.kind, message=_clean(problem.message.splitlines()[0]
                                                                              if problem.message else problem.kind))
        error.text = _clean(problem.message + (f"\nfix: {problem.fix}" if problem.fix else ""))
    rest = [f for i, f in enumerate(target.findings) if i not in claimed]
    if rest or not (target.checks or target.problems):
        case = _case(suite, classname, f"{target.target} [findings]", 0.0)
        problems = [f for f in rest if f.severity != "info"]
        if problems:
            _fail(case, problems)
        infos = [f for f in rest if f.severity == "info"]
        if infos:
            _notes(case, infos)


def render(report: Report) -> str:
    groups: dict[str, list[TargetReport]] = {}
    for target in report.targets:
        groups.setdefault(_module_of(target), []).append(target)
    root = ET.Element("testsuites", name="jaxdiag")
    for module, targets in groups.items():
        suite = ET.SubElement(root, "testsuite", name=_clean(module))
        for target in targets:
            _target_cases(suite, target)
        _count(suite, suite.findall("testcase"))
    _count(root, root.findall("testsuite/testcase"))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _count(element: ET.Element, cases: list[ET.Element]) -> None:
    element.set("tests", str(len(cases)))
    element.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    element.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    element.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    element.set("time", f"{sum(float(c.get('time', '0')) for c in cases):.3f}")
