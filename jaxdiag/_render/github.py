"""`--format github`: GitHub Actions workflow commands, one line per finding.

    ::error file=pkg/mod.py,line=12,title=JXB001 batch-dim-out-of-range::pkg.mod%3Amy_p: the rule returned ...

Severity `error`/`warning`/`info` becomes `::error`/`::warning`/`::notice`. Escaping follows GitHub's runner
(`toolkit/packages/core/src/command.ts`): in the message `%`, `\\r`, `\\n` are percent-encoded; in properties also
`:` and `,`. Only formats a `Report`: no JAX, no checks.
"""

from __future__ import annotations

from .._core._report import Finding, Report, TargetReport

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def line_for(target: TargetReport, finding: Finding) -> str:
    props: list[tuple[str, str]] = []
    if finding.location is not None:
        props.append(("file", finding.location.path.replace("\\", "/")))
        props.append(("line", str(max(1, finding.location.line))))
    props.append(("title", f"{finding.code} {finding.name}"))
    body = f"{target.target}: {finding.message}"
    if finding.fix:
        body += f"\nfix: {finding.fix}"
    head = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{COMMANDS[finding.severity]} {head}::{escape_data(body)}"


def render(report: Report) -> str:
    lines = [line_for(target, finding) for target in report.targets for finding in target.findings]
    for target in report.targets:  # blocking problems (import failure, jaxdiag's own bug): always an ::error
        for problem in target.all_problems():
            props = []
            if problem.location is not None:
                props += [("file", problem.location.path.replace("\\", "/")),
                          ("line", str(max(1, problem.location.line)))]
            props.append(("title", f"jaxdiag {problem.kind.replace('-', ' ')}"))
            head = ",".join(f"{key}={escape_property(value)}" for key, value in props)
            lines.append(f"::error {head}::{escape_data(f'{target.target}: {problem.message}')}")
    return "".join(line + "\n" for line in lines)
